import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Watches an API's requests: what goes out, what comes back, retries and refreshes.
///
/// A plugin has one method, which every event of the API's requests comes to: a plugin that
/// does not implement it does not compile, so none is silently never called. It gets an
/// ``APIContext``, a value with the API's configuration: a plugin observes, it does not reach
/// back into the API.
///
/// ```swift
/// struct Metrics: Plugin {
///     func observe(_ event: PluginEvent, api: APIContext) {
///         guard case .didReceive(.success(let response), _) = event else { return }
///         print(api.configuration.name, response.statusCode, response.duration)
///     }
/// }
/// ```
///
/// Register plugins for an API in ``APIConfiguration``'s `plugins` or for one request in
/// `RequestOptions(plugins:)`; they are called in that order, API first, on background threads,
/// and must return quickly.
public protocol Plugin: Sendable {
    /// Takes one event of the API's requests (see ``PluginEvent``).
    func observe(_ event: PluginEvent, api: APIContext)
}

/// What happened to an API's request, for its plugins.
///
/// For each attempt of a request, ``willSend(_:)`` is followed by exactly one
/// ``didReceive(_:request:)``, whether a response arrived or the attempt failed, timed out or
/// was cancelled. A stream's attempt is received at its head: the response has an empty body,
/// and its metrics the earlier exchanges' and what is known of its own so far. The head that
/// opens the stream is then followed by exactly one ``didEndStream(_:error:)``, however the
/// stream ends.
public enum PluginEvent: Sendable {
    /// An attempt is about to go out, exactly as it will be sent (signed, adapted).
    case willSend(URLRequest)
    /// An attempt ended: its response, or why there was none.
    case didReceive(Result<Response, APIError>, request: URLRequest)
    /// A stream's body ended: `error` says why, `nil` when it came whole. The response is its
    /// head's, its timing up to the end, its metrics with its whole transfer (the bytes
    /// received, its end) where the transport measures it. It comes once the transfer has ended,
    /// which may be just after the reader saw the end.
    case didEndStream(Response, error: APIError?)
    /// A request will be sent again after `delay` seconds; `retry` counts from 1. An event
    /// source reconnecting tells it too, its request the connection that ended, `retry` the
    /// reconnections since its last event.
    case didRetry(URLRequest, retry: Int, delay: TimeInterval)
    /// A credential refresh that a request of the API asked for ended. A delegate shared by
    /// several APIs refreshes once for them all: each API that asked hears it, once.
    case didRefresh(Result<Void, any Error>)
    /// A request failed for good; `request` is the attempt on the wire, if one was.
    case didFail(APIError, request: URLRequest?)
}
