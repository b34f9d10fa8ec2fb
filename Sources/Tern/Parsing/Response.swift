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
    /// When the request was handed to the transport.
    public var start: Date { timing.start }
    /// Seconds from ``start`` until the response was complete, on a monotonic clock, retries
    /// and redirects included. Tern measures this itself: URLSession on Linux never delivers
    /// `URLSessionTaskMetrics`.
    public var duration: TimeInterval { timing.duration }
    /// Both of the above, as the pipeline passes them.
    package let timing: Timing
    /// What the transport measured on the wire, each exchange in order: retries and redirects
    /// first, the one that answered last. Empty where the transport measures nothing (URLSession
    /// on Linux, stubs). For a stream's head, its own exchange so far (no end yet, where
    /// measured; see ``PluginEvent/didEndStream(_:error:)`` for the whole).
    ///
    /// ```swift
    /// let response: Response = try await client.request(route: .get("/products")).value
    /// if let wire = response.metrics.last {
    ///     print(wire.firstByte ?? 0, wire.reusedConnection ?? false, wire.httpVersion ?? "")
    /// }
    /// ```
    public let metrics: [TransferMetrics]
    /// Whether this is a stream's head: its body goes on after it, to the stream's end.
    package var opensStream = false
    /// For a download whose body went to its file: the bytes the file holds (resumed ones
    /// included); `nil` when the body is ``body``.
    package var fileLength: Int64?

    /// Creates a response: by hand, as a parser's test makes one.
    public init(request: URLRequest, head: ResponseHead, body: Data, start: Date = Date(), duration: TimeInterval = 0,
                metrics: [TransferMetrics] = []) {
        self.init(request: request, head: head, body: body, timing: Timing(start: start, duration: duration), metrics: metrics)
    }

    /// Creates a response timed by the pipeline.
    package init(request: URLRequest, head: ResponseHead, body: Data, timing: Timing, metrics: [TransferMetrics] = []) {
        self.request = request
        self.head = head
        self.body = body
        self.timing = timing
        self.metrics = metrics
    }

    /// Creates a response from Foundation's.
    package init(request: URLRequest, httpResponse: HTTPURLResponse, body: Data, timing: Timing = Timing(start: Date(), duration: 0),
                 metrics: [TransferMetrics] = []) {
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
    package struct Timing: Sendable, Equatable {
        /// When the request was handed to the transport.
        package let start: Date
        /// Seconds from then until the response was complete, on a monotonic clock.
        package let duration: TimeInterval

        /// A timing.
        package init(start: Date, duration: TimeInterval) {
            self.start = start
            self.duration = duration
        }
    }
}
