import Foundation

/// A finished download: the file at its destination, and the response it came with.
public struct DownloadedFile: Sendable {
    /// Where the file is: the destination asked for.
    public let fileURL: URL
    /// The final response's status and headers; its `body` is empty, the body being the file.
    public let response: Response
    /// How many bytes were already on disk from an earlier attempt and not downloaded again.
    public let resumedBytes: Int64

    /// Creates the value.
    package init(fileURL: URL, response: Response, resumedBytes: Int64) {
        self.fileURL = fileURL
        self.response = response
        self.resumedBytes = resumedBytes
    }
}
