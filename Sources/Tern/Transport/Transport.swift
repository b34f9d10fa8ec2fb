import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends requests and brings back responses: URLSession by default, anything in tests.
///
/// A transport only moves bytes. Timeouts, cancellation, validation and parsing are Tern's,
/// so a transport stays small:
///
/// ```swift
/// struct CannedTransport: Transport {
///     func send(_ request: TransportRequest,
///               completion: @escaping @Sendable (Result<TransportResponse, any Error>) -> Void) -> any TransportTask {
///         let response = HTTPURLResponse(url: request.urlRequest.url!, statusCode: 200, httpVersion: nil, headerFields: nil)!
///         completion(.success(TransportResponse(httpResponse: response, body: Data("[]".utf8))))
///         return NoTask()
///     }
/// }
/// ```
public protocol Transport: Sendable {
    /// Sends `request` and calls `completion` exactly once, on any thread, with the complete
    /// response or the error that stopped it. Returns a task that can cancel the exchange.
    func send(
        _ request: TransportRequest,
        completion: @escaping @Sendable (Result<TransportResponse, any Error>) -> Void
    ) -> any TransportTask
}

/// An exchange in flight, which can be cancelled.
public protocol TransportTask: Sendable {
    /// Stops the exchange; the transport then reports `URLError.cancelled` (or nothing at all,
    /// if it had already completed).
    func cancel()
}

/// A request ready for the wire.
public struct TransportRequest: Sendable {
    /// Method, URL, headers, and an in-memory body if any.
    public var urlRequest: URLRequest
    /// A body to stream from disk instead of `urlRequest.httpBody`, if any.
    public var bodyFile: URL?

    /// Creates a transport request.
    public init(urlRequest: URLRequest, bodyFile: URL? = nil) {
        self.urlRequest = urlRequest
        self.bodyFile = bodyFile
    }
}

/// A complete response: status and headers, and the whole body.
public struct TransportResponse: Sendable {
    /// Status, headers and URL.
    public var httpResponse: HTTPURLResponse
    /// The whole body.
    public var body: Data

    /// Creates a transport response.
    public init(httpResponse: HTTPURLResponse, body: Data) {
        self.httpResponse = httpResponse
        self.body = body
    }
}

/// A task with nothing to cancel, for transports that answer at once.
public struct NoTask: TransportTask {
    /// Creates the task.
    public init() {}
    /// Does nothing.
    public func cancel() {}
}

extension URLSessionTask: TransportTask {}
