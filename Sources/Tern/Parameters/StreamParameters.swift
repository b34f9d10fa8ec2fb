import Foundation

/// A body read from a stream as it is sent, for a body too large for memory that is not one
/// file: a recording in progress, bytes decrypted on the fly. The stream is made again for each
/// attempt.
///
/// ```swift
/// StreamParameters(length: size, contentType: "audio/ogg") { InputStream(url: recording)! }
/// ```
public struct StreamParameters: RequestParameters {
    /// The body.
    public var body: BodyStream
    /// The body's `Content-Type`.
    public var contentType: String
    public var headers: HTTPHeaders

    /// Creates a streamed body; `length`, when given, is the total that upload progress reports.
    public init(
        length: Int64? = nil,
        contentType: String = MIMEType.octetStream.rawValue,
        headers: HTTPHeaders = [:],
        makeStream: @escaping @Sendable () throws -> InputStream
    ) {
        body = BodyStream(length: length, makeStream: makeStream)
        self.contentType = contentType
        self.headers = headers
    }

    public func encode(into draft: inout RequestDraft) throws {
        draft.body = .stream(body)
        draft.headers["Content-Type"] = contentType
    }
}
