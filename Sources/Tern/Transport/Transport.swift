import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends requests and brings back responses: URLSession by default, anything in tests.
///
/// A transport only moves bytes. Timeouts, cancellation, redirects, validation and parsing are
/// Tern's, so a transport stays small; it must hand back a 3xx as it is, without following it:
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
    /// The most bytes of response body to take, after decompression, or `nil` for no limit. A
    /// transport stops the transfer as soon as the body passes it and fails with
    /// ``BodyLimitExceeded``; Tern also checks every body that arrives whole.
    public var maximumBodySize: Int?

    /// Creates a transport request.
    public init(urlRequest: URLRequest, bodyFile: URL? = nil, maximumBodySize: Int? = nil) {
        self.urlRequest = urlRequest
        self.bodyFile = bodyFile
        self.maximumBodySize = maximumBodySize
    }
}

/// A transport's error for a response body larger than ``TransportRequest/maximumBodySize``:
/// the transfer was stopped.
public struct BodyLimitExceeded: Error, Sendable, Equatable {
    /// The limit, in bytes.
    public let limit: Int
    /// How many bytes had arrived when the transfer was stopped, counting the chunk that passed
    /// the limit.
    public let receivedBytes: Int
    /// The `Content-Length` the server announced, when that alone was over the limit.
    public let declaredLength: Int?

    /// Creates the error.
    public init(limit: Int, receivedBytes: Int, declaredLength: Int? = nil) {
        self.limit = limit
        self.receivedBytes = receivedBytes
        self.declaredLength = declaredLength
    }
}

/// A transport's error for an exchange that failed after its response began: the status and
/// headers arrived, the body did not finish (the server hung up, the connection was lost).
public struct TransferInterrupted: Error, Sendable {
    /// The status and headers that arrived.
    public let response: HTTPURLResponse
    /// How many bytes of the body had arrived.
    public let receivedBytes: Int
    /// What stopped it; a `URLError` for the default transport.
    public let underlying: any Error

    /// Creates the error.
    public init(response: HTTPURLResponse, receivedBytes: Int, underlying: any Error) {
        self.response = response
        self.receivedBytes = receivedBytes
        self.underlying = underlying
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
