import Foundation

/// A file sent as the whole body, streamed from disk as it is sent, so memory stays flat
/// whatever its size.
///
/// ```swift
/// client.request(route: .put("/backups/latest"), parameters: FileParameters(archive, contentType: "application/zip"))
/// ```
public struct FileParameters: RequestParameters {
    /// The file.
    public var fileURL: URL
    /// The body's `Content-Type`.
    public var contentType: String
    public var headers: HTTPHeaders

    /// Creates a file body.
    public init(_ fileURL: URL, contentType: String = MIMEType.octetStream.rawValue, headers: HTTPHeaders = [:]) {
        self.fileURL = fileURL
        self.contentType = contentType
        self.headers = headers
    }

    /// Refuses what is not a regular file, before anything is sent: `/dev/zero` never ends.
    public func encode(into draft: inout RequestDraft) throws {
        _ = try regularFileSize(of: fileURL)
        draft.body = .file(fileURL, isTemporary: false)
        draft.headers["Content-Type"] = contentType
    }
}

/// The size of the regular file at `url`; throws when `url` is not a `file:` URL (an `https:`
/// URL whose path happens to exist on disk names no local file), when there is no file, or when
/// it is a device, a pipe or a directory.
func regularFileSize(of url: URL) throws -> Int64 {
    guard url.isFileURL else { throw NotAFileURL(url: url) }
    let attributes = try FileManager.default.attributesOfItem(atPath: url.resolvingSymlinksInPath().path)
    guard attributes[.type] as? FileAttributeType == .typeRegular, let size = attributes[.size] as? NSNumber else {
        throw NotARegularFile(path: url.path)
    }
    return size.int64Value
}

/// A file to send that is a device, a pipe or a directory.
struct NotARegularFile: Error, CustomStringConvertible {
    let path: String
    var description: String { "\(path) is not a regular file (a device, a pipe or a directory cannot be sent)" }
}

/// A file to send named by a URL that is not a `file:` URL.
struct NotAFileURL: Error, CustomStringConvertible {
    let url: URL
    var description: String { "\(url.absoluteString) is not a file: URL (only a local file can be sent as a file body)" }
}
