import Foundation

/// A request while it is being built: what parameter encoders change.
public struct RequestDraft: Sendable {
    /// The HTTP method.
    public var method: HTTPMethod
    /// The URL, query included.
    public var url: URL
    /// The headers so far: the API's common headers, then what encoders set.
    public var headers: HTTPHeaders
    /// The body.
    public var body: RequestBody

    /// Creates a draft.
    public init(method: HTTPMethod, url: URL, headers: HTTPHeaders = [:], body: RequestBody = .none) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// What a request sends after its headers.
public enum RequestBody: Sendable, Equatable {
    /// No body.
    case none
    /// Bytes in memory.
    case data(Data)
    /// A file, streamed from disk as it is sent, with its length known in advance.
    /// `isTemporary`: Tern made the file for this request and deletes it once the request ends.
    case file(URL, isTemporary: Bool)
}
