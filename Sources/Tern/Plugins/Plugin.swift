import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Watches an API's requests: what goes out, what comes back, retries and refreshes.
///
/// Each hook gets the request and an ``APIContext``, a value with the API's configuration:
/// a plugin observes, it does not reach back into the API.
///
/// Register plugins for an API in ``APIConfiguration/plugins`` or for one request in
/// `RequestOptions(plugins:)`; they are called in that order, API first. Every hook has a default
/// that does nothing. Hooks run on background threads and must return quickly.
///
/// For each attempt of a request, ``willSend(_:api:)`` is followed by exactly one
/// ``didReceive(_:for:api:)``, whether a response arrived or the attempt failed, timed out or was
/// cancelled.
public protocol Plugin: Sendable {
    /// An attempt is about to go out, exactly as it will be sent (signed, adapted).
    func willSend(_ request: URLRequest, api: APIContext)
    /// An attempt ended: its response, or why there was none.
    func didReceive(_ result: Result<Response, APIError>, for request: URLRequest, api: APIContext)
    /// A request will be sent again after `delay` seconds; `retry` counts from 1.
    func didRetry(_ request: URLRequest, retry: Int, after delay: TimeInterval, api: APIContext)
    /// The API's credential refresh ended.
    func didRefresh(_ result: Result<Void, any Error>, api: APIContext)
    /// A request failed for good.
    func didFail(_ error: APIError, request: URLRequest?, api: APIContext)
}

extension Plugin {
    /// Does nothing.
    public func willSend(_ request: URLRequest, api: APIContext) {}
    /// Does nothing.
    public func didReceive(_ result: Result<Response, APIError>, for request: URLRequest, api: APIContext) {}
    /// Does nothing.
    public func didRetry(_ request: URLRequest, retry: Int, after delay: TimeInterval, api: APIContext) {}
    /// Does nothing.
    public func didRefresh(_ result: Result<Void, any Error>, api: APIContext) {}
    /// Does nothing.
    public func didFail(_ error: APIError, request: URLRequest?, api: APIContext) {}
}
