import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A whole HTTP response, with the request that produced it and how long it took.
///
/// Ask for it as an endpoint's value when you need more than the decoded body:
///
/// ```swift
/// func download(_ id: Int) -> Promise<Response> { client.request(route: .get("/files/\(id)")) }
/// ```
public struct Response: Sendable {
    /// The request as it was sent, headers included.
    public let request: URLRequest
    /// The status and headers, as they arrived.
    package let head: ResponseHead
    /// The body, whole.
    public let body: Data
    /// When the request was handed to the transport, and how long until the response was complete.
    ///
    /// Tern measures this itself: URLSession on Linux never delivers `URLSessionTaskMetrics`.
    public let timing: Timing
    /// What the transport measured on the wire, for this exchange and the retries and redirects
    /// before it; empty where the transport measures nothing (URLSession on Linux, stubs). For a
    /// stream's head, its own exchange so far (no end yet, where measured; see
    /// ``PluginEvent/didEndStream(_:error:)`` for the whole).
    public let metrics: RequestMetrics

    /// Creates a response.
    public init(request: URLRequest, head: ResponseHead, body: Data, timing: Timing, metrics: RequestMetrics = RequestMetrics()) {
        self.request = request
        self.head = head
        self.body = body
        self.timing = timing
        self.metrics = metrics
    }

    /// Creates a response from Foundation's.
    package init(request: URLRequest, httpResponse: HTTPURLResponse, body: Data, timing: Timing, metrics: RequestMetrics = RequestMetrics()) {
        self.init(request: request, head: ResponseHead(httpResponse), body: body, timing: timing, metrics: metrics)
    }

    /// The response as Foundation's `HTTPURLResponse`, made the first time it is asked for.
    public var httpResponse: HTTPURLResponse { head.urlResponse }

    /// The status code.
    public var statusCode: Int { head.statusCode }

    /// What the API's ``HTTPCache`` did for this response; `nil` when the API has none.
    public var cacheOutcome: CacheOutcome? { metrics.last?.cacheOutcome }

    /// The URL that answered, after any redirect.
    public var url: URL? { head.url ?? request.url }

    /// The response headers.
    public var headers: HTTPHeaders { head.headers }

    /// The request's method.
    package var method: String? { request.httpMethod }

    /// When a request started and how long it took.
    public struct Timing: Sendable, Equatable {
        /// When the request was handed to the transport.
        public let start: Date
        /// Seconds from then until the response was complete, on a monotonic clock.
        public let duration: TimeInterval

        /// Creates a timing: for a response made by hand, as a parser's test makes one.
        public init(start: Date, duration: TimeInterval) {
            self.start = start
            self.duration = duration
        }
    }
}
