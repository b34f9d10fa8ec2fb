import Foundation

/// A whole body sent as it is, with its content type: bytes in memory, a file streamed from
/// disk, or a stream made anew for each attempt (Osprey's and TRON's `DataParameters`,
/// `FileParameters` and `StreamParameters`):
///
/// ```swift
/// BodyParameters(pngData, contentType: "image/png")
/// BodyParameters(archive, contentType: "application/zip")   // memory stays flat whatever its size
/// BodyParameters(length: size, contentType: "audio/ogg") { InputStream(url: recording)! }
/// ```
///
/// A file must be a regular file, checked before anything is sent (`/dev/zero` never ends); a
/// stream's `length`, when given, is what upload progress counts to, and the stream is held to
/// it (see ``BodyLengthMismatch``).
public struct BodyParameters: RequestParameters {
    /// The body.
    package var body: RequestBody
    /// The body's `Content-Type`.
    package var contentType: String
    /// The request's own headers; they win over the encoder's and the configuration's.
    public var headers: HTTPHeaders

    /// A body of bytes in memory.
    public init(_ data: Data, contentType: String = "application/octet-stream", headers: HTTPHeaders = [:]) {
        self.init(body: .data(data), contentType: contentType, headers: headers)
    }

    /// A file, streamed from disk as it is sent.
    public init(_ fileURL: URL, contentType: String = "application/octet-stream", headers: HTTPHeaders = [:]) {
        self.init(body: .file(fileURL, isTemporary: false), contentType: contentType, headers: headers)
    }

    /// A body read from a stream as it is sent, for one too large for memory that is not one
    /// file (a recording in progress, bytes decrypted on the fly); `length`, when given, is the
    /// total that upload progress reports. `makeStream` makes a new stream each time it is
    /// called: a retry or a redirect sends the body again, and a stream handed back closed fails
    /// the request.
    public init(
        length: Int64? = nil,
        contentType: String = "application/octet-stream",
        headers: HTTPHeaders = [:],
        makeStream: @escaping @Sendable () throws -> InputStream
    ) {
        self.init(body: .stream(BodyStream(length: length, makeStream: makeStream)), contentType: contentType, headers: headers)
    }

    private init(body: RequestBody, contentType: String, headers: HTTPHeaders) {
        self.body = body
        self.contentType = contentType
        self.headers = headers
    }

    /// Refuses a file that is not a regular file, or a stream of a negative length, before
    /// anything is sent.
    public func encode(into draft: inout RequestDraft) throws {
        if case .file(let file, _) = body { _ = try regularFileSize(of: file) }
        if case .stream(let stream) = body, let length = stream.length, length < 0 { throw NegativeBodyLength(length: length) }
        draft.body = body
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

/// A stream body whose stated length is below zero.
struct NegativeBodyLength: Error, CustomStringConvertible {
    let length: Int64
    var description: String { "the body stream's length is \(length) bytes: give its length in bytes, or nil when it is not known" }
}

/// A file to send named by a URL that is not a `file:` URL.
struct NotAFileURL: Error, CustomStringConvertible {
    let url: URL
    var description: String { "\(url.absoluteString) is not a file: URL (only a local file can be sent as a file body)" }
}
