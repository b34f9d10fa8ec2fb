/// Turns response bodies into values, and error responses into errors.
///
/// An API has one (its `responseParser`); a request can use another through
/// `RequestOptions(parser:)`. ``JSONParser`` is the usual one.
public protocol ResponseParser: Sendable {
    /// The `Accept` header requests send when nothing else sets one, or `nil` for none.
    var acceptHeader: String? { get }

    /// Decodes a value of `type` from an accepted response.
    ///
    /// - Throws: Any error; Tern reports it as ``APIError/parsingFailed(_:)`` with the coding
    ///   path, URL, status and the start of the body.
    func parse<Value: Decodable>(_ type: Value.Type, from response: Response) throws -> Value

    /// The server's own error, decoded from a response whose status was not accepted, or `nil`.
    /// Tern keeps it in the failure, for ``APIError/StatusFailure/serverError(as:decoder:)``.
    func serverError(from response: Response) -> (any Error & Sendable)?
}

extension ResponseParser {
    /// No `Accept` header.
    public var acceptHeader: String? { nil }

    /// No server error type.
    public func serverError(from response: Response) -> (any Error & Sendable)? { nil }
}
