/// How many bytes Tern takes of something, such as a response body kept in memory, or no limit.
///
/// ```swift
/// APIConfiguration(maximumResponseSize: .megabytes(16))
/// RequestOptions(maximumResponseSize: .unlimited)        // this one request may be any size
/// RequestOptions(maximumResponseSize: 4096)              // bytes
/// ```
public struct SizeLimit: Sendable, Hashable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    /// The most bytes allowed, or `nil` for no limit.
    package let bytes: Int?

    /// A limit of `bytes` (negative counts as 0), or none for `nil`.
    package init(bytes: Int?) {
        self.bytes = bytes.map { max(0, $0) }
    }

    /// A limit in bytes.
    public init(integerLiteral bytes: Int) {
        self.init(bytes: bytes)
    }

    /// A limit of `count` mebibytes (1,048,576 bytes each).
    public static func megabytes(_ count: Int) -> SizeLimit {
        SizeLimit(bytes: count.multipliedReportingOverflow(by: 1 << 20).overflow ? nil : count << 20)
    }

    /// No limit.
    public static let unlimited = SizeLimit(bytes: nil)

    /// The limit, in words.
    public var description: String {
        guard let bytes else { return "no limit" }
        return bytes >= 1 << 20 && bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : "\(bytes) bytes"
    }
}
