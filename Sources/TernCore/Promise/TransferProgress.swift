/// How far a request's upload or download has come, as ``Promise/onProgress(in:_:)`` reports it.
public struct TransferProgress: Sendable, Equatable {
    /// Which way the bytes go.
    public enum Direction: Sendable, Equatable {
        /// The request's body, going out.
        case upload
        /// The response's body, coming in.
        case download
    }

    /// Which way the bytes go.
    public let direction: Direction
    /// The bytes sent or received so far.
    public let completedBytes: Int64
    /// The whole body's length, when known.
    public let totalBytes: Int64?

    /// Creates a report.
    package init(direction: Direction, completedBytes: Int64, totalBytes: Int64?) {
        self.direction = direction
        self.completedBytes = completedBytes
        self.totalBytes = totalBytes
    }

    /// The share done, from 0 to 1, when the total is known.
    public var fractionCompleted: Double? {
        guard let totalBytes else { return nil }
        return totalBytes > 0 ? min(1, Double(completedBytes) / Double(totalBytes)) : 1
    }
}
