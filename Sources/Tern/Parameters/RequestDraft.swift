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
    /// Asks whether the request has ended already.
    let endedCheck: @Sendable () -> Bool

    /// Creates a draft.
    package init(method: HTTPMethod, url: URL, headers: HTTPHeaders = [:], body: RequestBody = .none) {
        self.init(method: method, url: url, headers: headers, body: body, endedCheck: { false })
    }

    init(method: HTTPMethod, url: URL, headers: HTTPHeaders, body: RequestBody = .none, endedCheck: @escaping @Sendable () -> Bool) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.endedCheck = endedCheck
    }

    /// Whether the request was cancelled or timed out while its parameters were being encoded:
    /// an encoder that works long (writing a file, say) checks it now and then, and stops.
    public var isCancelled: Bool { endedCheck() }
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
    /// A stream, made anew for each attempt.
    case stream(BodyStream)
}
