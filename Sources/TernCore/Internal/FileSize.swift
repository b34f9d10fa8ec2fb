import Foundation

/// The size of the file at `url`, or `nil` when there is none.
package func fileSize(of url: URL) -> Int64? {
    (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value
}
