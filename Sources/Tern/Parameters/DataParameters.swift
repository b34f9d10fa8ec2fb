import Foundation

/// A raw body sent as it is, with its content type.
///
/// ```swift
/// DataParameters(pngData, contentType: "image/png")
/// ```
public struct DataParameters: RequestParameters {
    /// The body.
    public var data: Data
    /// The body's `Content-Type`.
    public var contentType: String
    public var headers: HTTPHeaders

    /// Creates a raw body.
    public init(_ data: Data, contentType: String = MIMEType.octetStream.rawValue, headers: HTTPHeaders = [:]) {
        self.data = data
        self.contentType = contentType
        self.headers = headers
    }

    public func encode(into draft: inout RequestDraft) throws {
        draft.body = .data(data)
        draft.headers["Content-Type"] = contentType
    }
}
