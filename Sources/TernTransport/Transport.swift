import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends requests and reports each exchange as it happens: body bytes sent, the response's
/// head, body chunks, the end. URLSession by default; anything in tests.
///
/// A transport only moves bytes. Timeouts, cancellation, redirects, the body limit,
/// validation and parsing are Tern's, so a transport stays small; it must hand back a 3xx as it
/// is, without following it. A transport that answers whole responses (a stub, a test double)
/// conforms to ``WholeResponseTransport`` instead, and gets these events made for it.
public protocol Transport: Sendable {
    /// Starts sending `request` and reports the exchange to `receiver`, one event at a time and
    /// in order, ending with exactly one ``TransportReceiver/didComplete(with:)``. Returns a task
    /// that can cancel the exchange.
    func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask

    /// The transport's own thread as a task executor, if it has one: a task that prefers it
    /// (`withTaskExecutorPreference`) sends requests and resumes with their answers there.
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    var taskExecutor: (any TaskExecutor)? { get }
}

/// A transport that may check ``TransportRequest/pinnedKeys``: Tern's own. Tern fails a request
/// to a pinned host before sending it over any other, or over one that says it cannot: never a
/// silent pass.
package protocol KeyPinningTransport: Transport {
    /// Whether this transport checks the pins.
    var canPinKeys: Bool { get }
    /// Whose word its answers carry, when not the system's authorities' (`nil`): the cache
    /// keeps an answer under it, and serves it only to requests sent under the same.
    var trustMark: String? { get }
    /// What says who asks that the transport adds to `request` below Tern, where the cache
    /// cannot see it (a session's own headers, the cookies a caller's session sends): part of
    /// the trust its answer is kept under.
    func credentialsItAdds(to request: TransportRequest) -> String?
}

extension KeyPinningTransport {
    /// None: what it sends, Tern has seen.
    package func credentialsItAdds(to request: TransportRequest) -> String? { nil }
}

extension Transport {
    /// None: the transport has no thread of its own.
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    public var taskExecutor: (any TaskExecutor)? { nil }
}

/// What hears an exchange's events: Tern's pipeline, which decides from the head and from each
/// chunk whether the transfer goes on.
///
/// A transport calls it one event at a time (never two at once) and in this order: any
/// ``didSendBodyData(_:of:)``, then at most one ``didReceive(_:)-(ResponseHead)``, then any
/// ``didReceive(_:)-(Data)``, then one ``didComplete(with:)``, each of the last three perhaps
/// just after a ``didCollect(_:)``. After a ``TransferDecision/stop``
/// it stops the transfer, sends no more chunks and reports the end, with whatever error
/// stopping caused.
public protocol TransportReceiver: Sendable {
    /// Body bytes sent so far, and the body's whole length when known; counted from 0 again
    /// when the transport sends the body again from its start (on a new connection).
    func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?)
    /// The response's status and headers arrived; the body has not yet.
    func didReceive(_ head: ResponseHead) -> TransferDecision
    /// The next chunk of the body, decompressed.
    func didReceive(_ chunk: Data) -> TransferDecision
    /// The exchange ended: completely when `error` is `nil`.
    func didComplete(with error: (any Error)?)
    /// What the exchange did on the wire, just before ``didComplete(with:)``, when the transport
    /// measures it. For a stream, whose end may be hours away, a transport may also tell what it
    /// knows just before the head (the connection, TLS, the first byte; no end): the end's
    /// report replaces it.
    func didCollect(_ metrics: TransferMetrics)
}

/// A receiver that keeps each exchange's metrics when the transport makes more than one for a
/// request: the cache's, which asks again without its conditions after a `304` for another
/// response than the kept one.
package protocol EarlierExchangeReceiver: TransportReceiver {
    /// An exchange made for the request ended, measured as `metrics` when the transport measured
    /// it; another would go on in its place. Whether the request still waits for it: one that
    /// ended meanwhile (cancelled, timed out) has nothing sent for it.
    func didEndEarlierExchange(_ metrics: TransferMetrics?) -> Bool
}

extension TransportReceiver {
    /// Drops them.
    public func didCollect(_ metrics: TransferMetrics) {}
}

/// Whether a transfer goes on after an event.
public enum TransferDecision: Sendable {
    /// Go on.
    case proceed
    /// Stop the transfer now.
    case stop
    /// The chunk (or the head) is taken; send no more until the task's
    /// ``TransportTask/resumeReceiving()``, so that a slow reader holds the server back instead
    /// of filling memory, or the body waits while the head is judged. A transport that cannot
    /// pause takes it as ``proceed``.
    case pause
}

/// A transport that answers with whole responses: the simple way to conform, for stubs and
/// tests. Tern makes the events from each answer.
///
/// ```swift
/// struct CannedTransport: WholeResponseTransport {
///     func send(_ request: TransportRequest,
///               completion: @escaping @Sendable (Result<TransportResponse, any Error>) -> Void) -> any TransportTask {
///         let head = ResponseHead(url: request.urlRequest.url!, statusCode: 200, httpVersion: nil, headers: [:])!
///         completion(.success(TransportResponse(head: head, body: Data("[]".utf8))))
///         return NoTask()
///     }
/// }
/// ```
public protocol WholeResponseTransport: Transport {
    /// Sends `request` and calls `completion` exactly once, on any thread, with the complete
    /// response or the error that stopped it. Returns a task that can cancel the exchange.
    func send(
        _ request: TransportRequest,
        completion: @escaping @Sendable (Result<TransportResponse, any Error>) -> Void
    ) -> any TransportTask
}

extension WholeResponseTransport {
    /// Sends through ``send(_:completion:)`` and reports the answer as events.
    public func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
        send(request) { result in
            switch result {
            case .success(let response):
                if receiver.didReceive(response.head) != .stop, !response.body.isEmpty {
                    _ = receiver.didReceive(response.body)
                }
                receiver.didComplete(with: nil)
            case .failure(let error):
                receiver.didComplete(with: error)
            }
        }
    }
}

/// An exchange in flight, which can be cancelled.
public protocol TransportTask: Sendable {
    /// Stops the exchange; the transport then reports `URLError.cancelled` (or nothing at all,
    /// if it had already completed).
    func cancel()

    /// Goes on receiving after a ``TransferDecision/pause``; does nothing if the exchange is not
    /// paused, or has ended.
    func resumeReceiving()
}

extension TransportTask {
    /// Nothing to resume: the transport does not pause.
    public func resumeReceiving() {}
}

/// A task that can tell whether its exchange waits its turn for a connection to its host, all
/// the connections the transport allows there being in use: for the error of a request whose
/// time ran out meanwhile.
package protocol ConnectionWaiting: TransportTask {
    /// Whether the exchange waits in the transport's line for a connection now.
    var isWaitingForConnection: Bool { get }
    /// Whether the exchange waits for another to end and free a descriptor, the process having
    /// had none for its socket or its body's file: for the idle timeout, which does not count it.
    var isWaitingForADescriptor: Bool { get }
}

/// A task that reports nothing of its exchange until it ends (a caller's session's, whose
/// completion handler gets the answer whole): no byte is seen to move meanwhile, so the idle
/// timeout does not watch it.
package protocol SilentUntilItEnds: TransportTask {}

extension ConnectionWaiting {
    /// Never: the transport holds no exchange back for a descriptor.
    package var isWaitingForADescriptor: Bool { false }
}

/// A request ready for the wire.
public struct TransportRequest: Sendable {
    /// Method, URL, headers, and the body when ``body`` is ``TransportBody/inRequest``.
    public var urlRequest: URLRequest
    /// Where the body comes from: one place, never two.
    public var body: TransportBody
    /// The most bytes of response body to take, after decompression, or `nil` for no limit.
    /// Tern's receiver enforces it (it stops the transfer as soon as the body passes it); a
    /// transport can read it to stop earlier still.
    package var maximumBodySize: Int?
    /// The keys the server must show one of, each the Base64 of the SHA-256 of a certificate's
    /// public key (its SubjectPublicKeyInfo); none to check when empty. A transport that checks
    /// them (``CurlTransport``, and ``URLSessionTransport`` on Apple platforms) fails the exchange
    /// before sending anything when the server's chain holds none of them.
    public var pinnedKeys: [String]
    /// Whether the request goes out on a new connection, not one kept from before: an event
    /// source's, whose reconnections are its only retries. On a connection it reused that
    /// turned out dead, libcurl sends the request again on a new one, an attempt the source
    /// did not count.
    package var usesNewConnection = false
    /// Whether the response is a stream, open for as long as the server sends: a transport runs
    /// it on connections of its own, under a cap of its own, so that open streams never hold a
    /// request back from a connection, however many there are.
    package var isStream = false
    /// Header fields the API sends as credentials of its own (an `X-Api-Key`: the
    /// ``RedirectPolicy``'s sensitive headers), in any case: a cache binds what they fetch to
    /// their values, and a recording hides them, as it does `Authorization`.
    package var credentialHeaders: Set<String> = []
    /// Whether the request is a hop of a redirect chain that left its first request's origin:
    /// a transport adds no credential of its own to it.
    package var hasLeftOrigin = false

    /// The names, lowercased, of the fields that carry credentials: `Authorization`,
    /// `Proxy-Authorization`, `Cookie` and ``credentialHeaders``.
    package var credentialNames: Set<String> { Self.credentialNames(credentialHeaders) }

    /// The names, lowercased, of the fields that carry credentials: `Authorization`,
    /// `Proxy-Authorization`, `Cookie` and those of `ownCredentials`, in any case.
    package static func credentialNames(_ ownCredentials: Set<String>) -> Set<String> {
        Set(ownCredentials.map { $0.lowercased() }).union(["authorization", "proxy-authorization", "cookie"])
    }

    /// Creates a transport request.
    public init(urlRequest: URLRequest, body: TransportBody = .inRequest, maximumBodySize: Int? = nil, pinnedKeys: [String] = []) {
        self.urlRequest = urlRequest
        self.body = body
        self.maximumBodySize = maximumBodySize
        self.pinnedKeys = pinnedKeys
    }
}

/// Where a transport request's body comes from.
public enum TransportBody: Sendable {
    /// The request's own `httpBody`, or no body when it has none: bytes in memory, where a
    /// delegate that signs the request can read them.
    case inRequest
    /// A file, streamed from disk as it is sent.
    case file(URL)
    /// A stream: make a new one for each send.
    case stream(BodyStream)
}

extension TransportRequest {
    /// The body's length when it is known before sending: what upload progress counts up to.
    package var bodyLength: Int64? {
        switch body {
        case .inRequest: urlRequest.httpBody.map { Int64($0.count) }
        // The file a link leads to, as the transports read it: not the link's own size.
        case .file(let file): try? RegularFile.size(of: file)
        case .stream(let stream): stream.length
        }
    }
}

/// Why an exchange ended before its request was sent: the server's certificate holds none of
/// the request's ``TransportRequest/pinnedKeys``.
package struct PinnedKeyMismatch: Error, Sendable, Equatable {
    /// The keys that were asked for.
    package let pins: [String]
    /// The key the server's certificate holds, in the pins' form, if the transport could read it.
    package let presented: String?

    /// Creates the error.
    package init(pins: [String], presented: String? = nil) {
        self.pins = pins
        self.presented = presented
    }
}

/// Why a transfer was stopped: its response body was larger than
/// ``TransportRequest/maximumBodySize``.
package struct BodyLimitExceeded: Error, Sendable, Equatable {
    /// The limit, in bytes.
    package let limit: Int
    /// How many bytes had arrived when the transfer was stopped, counting the chunk that passed
    /// the limit.
    package let receivedBytes: Int
    /// The `Content-Length` the server announced, when that alone was over the limit.
    package let declaredLength: Int?
    /// The response's status.
    package let statusCode: Int?

    /// Creates the error.
    package init(limit: Int, receivedBytes: Int, declaredLength: Int? = nil, statusCode: Int? = nil) {
        self.limit = limit
        self.receivedBytes = receivedBytes
        self.declaredLength = declaredLength
        self.statusCode = statusCode
    }
}

/// A transport's error for an exchange that failed after its response began: the status and
/// headers arrived, the body did not finish (the server hung up, the connection was lost).
package struct TransferInterrupted: Error, Sendable {
    /// The status and headers that arrived.
    package let head: ResponseHead
    /// How many bytes of the body had arrived.
    package let receivedBytes: Int
    /// What stopped it; a `URLError` for the default transport.
    package let underlying: any Error

    /// Creates the error.
    package init(head: ResponseHead, receivedBytes: Int, underlying: any Error) {
        self.head = head
        self.receivedBytes = receivedBytes
        self.underlying = underlying
    }
}

/// A complete response: status and headers, and the whole body.
public struct TransportResponse: Sendable {
    /// Status, headers and URL: read by whoever uses a transport bare.
    public var head: ResponseHead
    /// The whole body.
    public var body: Data

    /// Creates a transport response.
    public init(head: ResponseHead, body: Data) {
        self.head = head
        self.body = body
    }

    /// Creates a transport response from Foundation's response.
    package init(httpResponse: HTTPURLResponse, body: Data) {
        self.init(head: ResponseHead(httpResponse), body: body)
    }

    /// Foundation's response for the head.
    package var httpResponse: HTTPURLResponse { head.urlResponse }
}

/// A task with nothing to cancel, for transports that answer at once.
public struct NoTask: TransportTask {
    /// Creates the task.
    public init() {}
    /// Does nothing.
    public func cancel() {}
}

extension URLSessionTask: TransportTask {}
