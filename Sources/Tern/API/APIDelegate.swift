import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The object that signs an API's requests.
///
/// ```swift
/// final class SessionStore: APIDelegate {
///     let token: String      // immutable, or behind a lock: the delegate runs on background threads
///     init(token: String) { self.token = token }
///     func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
///         request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
///     }
/// }
/// api.delegate = sessionStore   // held weakly
/// ```
///
/// It is called on the API's pipeline queue, never on the main queue, once per request just
/// before it is sent; what it sets wins over every other header. A header name it sets that
/// HTTP forbids fails the request with ``APIError/InvalidRequest/Reason/invalidHeader(name:)``;
/// note that Foundation itself drops, without a word, any header *value* containing a line
/// break that is set on a `URLRequest`.
public protocol APIDelegate: AnyObject, Sendable {
    /// Changes `request` just before it is sent: add credentials, sign it.
    ///
    /// - Throws: Any error, to stop the request; it fails with
    ///   ``APIError/invalidRequest(_:)`` carrying the error's description.
    func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws
}

extension APIDelegate {
    /// Sends the request as it is.
    public func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {}
}
