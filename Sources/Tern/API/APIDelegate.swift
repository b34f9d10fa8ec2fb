import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The object that signs an API's requests and refreshes its credentials.
///
/// ```swift
/// final class SessionStore: APIDelegate {
///     let token = TokenBox()   // thread-safe: the delegate is called from background threads
///     func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
///         request.setValue("Bearer \(token.access)", forHTTPHeaderField: "Authorization")
///     }
///     func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
///         Promise { self.token.store(try await authAPI.refresh(self.token.refresh).value) }
///     }
/// }
/// api.delegate = sessionStore   // held by the API
/// ```
///
/// Each method takes an ``AbstractAPI``, even for an ``APIClient``. ``api(_:willSend:)`` has no
/// default, so that one written with `_ api: APIClient` does not compile rather than leave
/// requests unsigned; the others have defaults, and one written so is another method, which Tern
/// never calls.
///
/// Tern guarantees, whatever the number of requests:
/// - ``api(_:willSend:)`` runs before every attempt, so a replayed request carries the new token;
/// - however many requests find their credentials expired at once, ``refreshCredentials(for:)``
///   runs once; requests that fail or start meanwhile wait for it, then are replayed once;
/// - a request refused again right after its replay, with the credentials still current, fails
///   with ``APIError/AuthenticationFailure/stillUnauthorized(statusCode:)``, never loops;
/// - a request signed with credentials older than the current ones is replayed without a new
///   refresh, its replay too;
/// - when the refresh fails, every waiting request fails once with
///   ``APIError/AuthenticationFailure/refreshFailed(_:)``; the next request may try again;
/// - refreshes that fail on the network do not count against ``APIConfiguration``'s `refreshLimit`.
///
/// The refresh call itself usually goes through the same API: send it with
/// `RequestOptions(authenticates: false)`, so that it is neither signed nor held for the refresh
/// it is part of. A request of an API of this delegate made in ``refreshCredentials(for:)``, or
/// in a task it starts, while the refresh runs, is sent so even without it (after the refresh,
/// such a task's requests are signed as any other); one made from a callback is not, and
/// would wait for itself until the API's timeout, whose error then says so.
///
/// Every method is called on a background queue, never the main queue. What the delegate sets
/// is checked like every other header: a name or value HTTP forbids fails the request with
/// ``APIError/InvalidRequest/Reason/invalidHeader(name:)``, a framing header (`Content-Length`,
/// `Host`, …) with ``APIError/InvalidRequest/Reason/framingHeader(name:)``, a method that is not
/// a token with ``APIError/InvalidRequest/Reason/invalidMethod(_:)``. (Foundation itself drops,
/// without a word, a header value with a line break or NUL set on a `URLRequest`.)
public protocol APIDelegate: AnyObject, Sendable {
    /// Changes `request` just before each attempt is sent: add credentials, sign it.
    ///
    /// - Throws: Any error, to stop the request; it fails with
    ///   ``APIError/invalidRequest(_:)`` carrying the error's description.
    func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws

    /// Whether `response` says the credentials have expired. The default: status 401.
    ///
    /// `data` is the body in memory: empty for a download, whose body goes to its file, and
    /// for a stream, judged at its head.
    func api(_ api: AbstractAPI, needsRefreshFor response: HTTPURLResponse, data: Data, request: URLRequest) -> Bool

    /// Whether to refresh before sending `request`, for a token known to be about to expire.
    /// The default: never.
    func api(_ api: AbstractAPI, needsRefreshBeforeSending request: URLRequest) -> Bool

    /// Gets new credentials. Called once however many requests wait for it.
    ///
    /// The default fails with ``APIError/AuthenticationFailure/refreshUnavailable``.
    func refreshCredentials(for api: AbstractAPI) -> Promise<Void>
}

extension APIDelegate {
    /// Status 401.
    public func api(_ api: AbstractAPI, needsRefreshFor response: HTTPURLResponse, data: Data, request: URLRequest) -> Bool {
        response.statusCode == 401
    }

    /// Never.
    public func api(_ api: AbstractAPI, needsRefreshBeforeSending request: URLRequest) -> Bool { false }

    /// Fails: this delegate does not refresh.
    public func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
        Promise(error: APIError.authentication(.refreshUnavailable), in: .global())
    }
}
