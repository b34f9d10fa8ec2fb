/// What a request sends besides its route: query items, a body, headers.
///
/// Tern ships ``URLParameters``, ``JSONParameters``, ``FormParameters``,
/// ``MultipartParameters`` and ``BodyParameters``; any type conforming to this protocol is an
/// encoder too:
///
/// ```swift
/// struct CSVParameters: RequestParameters {
///     let rows: [[String]]
///     var headers: HTTPHeaders = [:]
///     func encode(into draft: inout RequestDraft) throws {
///         draft.body = .data(Data(rows.map { $0.joined(separator: ",") }.joined(separator: "\r\n").utf8))
///         draft.headers["Content-Type"] = "text/csv"
///     }
/// }
/// ```
///
/// Headers apply in this order, the later winning: the API configuration's common headers,
/// what ``encode(into:)`` sets (its `Content-Type`), the parameters' ``headers``, then
/// anything the API's delegate adds. So an encoder sets its content type unless the caller
/// gave one in `headers`.
public protocol RequestParameters: Sendable {
    /// Headers the caller gave with these parameters; they override the encoder's own.
    var headers: HTTPHeaders { get }

    /// Adds the parameters to the request being built: to its URL's query, or as its body with
    /// the matching `Content-Type`.
    ///
    /// - Throws: Preferably ``APIError/encodingFailed(_:)`` naming the parameter; any other
    ///   error is wrapped in it.
    func encode(into draft: inout RequestDraft) throws
}
