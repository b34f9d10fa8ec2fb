import Foundation

// Defining an API, Routes: a value put into a path as one segment (checked by
// `EndpointJoiningWireTests.aValueIsOneSegmentAndNeverClimbs`).

/// `value` as one path segment, escaped; `nil` for `""`, `.` and `..`, which would name another path.
func pathSegment(_ value: String) -> String? {
    guard !value.isEmpty, value != ".", value != ".." else { return nil }
    return value.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/")))
}
