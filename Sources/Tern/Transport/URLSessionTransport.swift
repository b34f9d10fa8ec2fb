import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport over a `URLSession`: the default on Apple platforms, and on Linux where libcurl
/// cannot be loaded (there ``CurlTransport`` is the default).
///
/// By default each API gets a session of its own, made from `URLSessionConfiguration.default`,
/// whose delegate passes each exchange's events to Tern as they come. Its calls run on one
/// serial queue, since a task's chunks must arrive in order, and each exchange is completed
/// (validated and parsed) right there: a hop to a concurrent queue cost more than parsing in
/// parallel gained (measured with `EndToEndAB`: 1.13× raw URLSession's time per request with
/// the hop, 1.02× without). When the transport is released (after the last request that uses it
/// has finished) that session is invalidated.
///
/// A session passed in stays the caller's: it is used as it is and never invalidated, and since
/// Tern is not its delegate, its responses arrive whole, so a body over the limit is refused
/// only once it has arrived.
public final class URLSessionTransport: Transport {
    /// The session requests go through.
    public let session: URLSession
    /// The exchanges in flight, when the session is ours.
    private let exchanges: ExchangeTable?

    /// Creates a transport over a new session made from `configuration`, which keeps no cookies:
    /// each API keeps its own, in its ``CookieJar``.
    public init(configuration: URLSessionConfiguration = .default) {
        // A copy, so that the caller's stays as it was.
        let configuration = (configuration.copy() as? URLSessionConfiguration) ?? configuration
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        let exchanges = ExchangeTable()
        let delegateQueue = OperationQueue()
        delegateQueue.name = "tern.transport"
        delegateQueue.maxConcurrentOperationCount = 1
        // FoundationNetworking queues a delegate call per chunk received, with no backpressure;
        // at a lower priority than its own work, a flood of chunks outran these calls (and so
        // the size limit) for seconds.
        delegateQueue.underlyingQueue = exchanges.queue
        session = URLSession(configuration: configuration, delegate: exchanges, delegateQueue: delegateQueue)
        self.exchanges = exchanges
    }

    /// Creates a transport over a session of the caller's, which is never invalidated here. Its
    /// configuration's cookie storage, if any, keeps and sends cookies besides the API's jar.
    public init(session: URLSession) {
        self.session = session
        exchanges = nil
    }

    deinit {
        guard exchanges != nil else { return }
        // Lets tasks still running finish; every request holds the transport, so none are left.
        // The last request often releases the transport inside a delegate call, on this
        // session's own delegate queue: invalidating (and freeing) the session from there races
        // with FoundationNetworking's teardown on Linux. So it is done from another queue.
        let session = session
        DispatchQueue.global().async { session.finishTasksAndInvalidate() }
    }

    public func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
        guard let exchanges else { return sendThroughCallersSession(request, to: receiver) }
        guard let (urlRequest, uploadFile) = Self.prepared(request, reportingTo: receiver) else { return NoTask() }
        let task = if let uploadFile {
            session.uploadTask(with: urlRequest, fromFile: uploadFile)
        } else {
            session.dataTask(with: urlRequest)
        }
        exchanges.begin(task, receiver: receiver)
        task.resume()
        return ExchangeTask(task: task, table: exchanges)
    }

    /// A task that is cancelled only while its exchange is open. FoundationNetworking crashes
    /// now and then when a cancel races the task's own completion (its task registry removes the
    /// task twice); a cancel that comes after the completion was delivered is skipped.
    private struct ExchangeTask: TransportTask {
        let task: URLSessionTask
        let table: ExchangeTable

        func cancel() {
            if table.isOpen(task) { task.cancel() }
        }
    }

    /// A session that is not ours has no delegate of ours: its completion handlers get whole
    /// bodies, reported to the receiver as events.
    private func sendThroughCallersSession(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
        let handler: @Sendable (Data?, URLResponse?, (any Error)?) -> Void = { data, response, error in
            if let error {
                receiver.didComplete(with: error)
            } else if let response = response as? HTTPURLResponse {
                if receiver.didReceive(response) == .proceed, let data, !data.isEmpty { _ = receiver.didReceive(data) }
                receiver.didComplete(with: nil)
            } else {
                receiver.didComplete(with: URLError(.badServerResponse))
            }
        }
        guard let (urlRequest, uploadFile) = Self.prepared(request, reportingTo: receiver) else { return NoTask() }
        let task = if let uploadFile {
            session.uploadTask(with: urlRequest, fromFile: uploadFile, completionHandler: handler)
        } else {
            session.dataTask(with: urlRequest, completionHandler: handler)
        }
        // Tern follows redirects itself. Before task delegates (Apple's 2021 releases) the
        // caller's session follows them, and Apple's URLSession drops `Authorization` on each.
        if #available(macOS 12, iOS 15, tvOS 15, watchOS 8, *) {
            task.delegate = RedirectRefusal.shared
        }
        task.resume()
        return task
    }
}

/// A task delegate that lets a caller's session follow no redirect.
private final class RedirectRefusal: NSObject, URLSessionTaskDelegate, Sendable {
    static let shared = RedirectRefusal()

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}

/// The session's delegate: passes each task's events to its receiver.
private final class ExchangeTable: NSObject, URLSessionDataDelegate, Sendable {
    private struct Exchange {
        let receiver: any TransportReceiver
        /// Whether the receiver said stop: the task is being cancelled, and hears no more chunks.
        var isStopping = false
        /// Whether the receiver has heard the head.
        var hasHead = false
    }

    private let exchanges = Locked([Int: Exchange]())
    /// Where the session calls this delegate; held here, since an operation queue does not
    /// retain its underlying queue.
    let queue = DispatchQueue(label: "tern.transport", qos: .userInteractive)

    func begin(_ task: URLSessionTask, receiver: any TransportReceiver) {
        exchanges.withLock { $0[task.taskIdentifier] = Exchange(receiver: receiver) }
    }

    /// Whether `task` has not completed yet.
    func isOpen(_ task: URLSessionTask) -> Bool {
        exchanges.withLock { $0[task.taskIdentifier] != nil }
    }

    /// The receiver of `task`, unless it has said stop.
    private func receiver(of task: URLSessionTask) -> (any TransportReceiver)? {
        exchanges.withLock { exchanges in
            exchanges[task.taskIdentifier].flatMap { $0.isStopping ? nil : $0.receiver }
        }
    }

    /// Stops `task` when its receiver says so, once.
    private func obey(_ decision: TransferDecision, for task: URLSessionTask) {
        guard decision == .stop else { return }
        exchanges.withLock { $0[task.taskIdentifier]?.isStopping = true }
        task.cancel()
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        // Unknown is -1 on Apple platforms, 0 for a stream on Linux.
        receiver(of: task)?.didSendBodyData(totalBytesSent, of: totalBytesExpectedToSend > 0 ? totalBytesExpectedToSend : nil)
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        completionHandler(.allow)
        // Anything but HTTP ends without a head, which the receiver reports as a bad response.
        guard let http = response as? HTTPURLResponse else { return }
        let receiver = exchanges.withLock { exchanges -> (any TransportReceiver)? in
            exchanges[dataTask.taskIdentifier]?.hasHead = true
            return exchanges[dataTask.taskIdentifier].flatMap { $0.isStopping ? nil : $0.receiver }
        }
        if let receiver { obey(receiver.didReceive(http), for: dataTask) }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let receiver = receiver(of: dataTask) else { return }
        obey(receiver.didReceive(data), for: dataTask)
    }

    /// Tern follows redirects itself, through its pipeline: the session follows none, and the
    /// 3xx is the response.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let exchange = exchanges.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        // FoundationNetworking skips the head of a 3xx without a Location; the task has it.
        if !exchange.hasHead, error == nil, let response = task.response as? HTTPURLResponse {
            _ = exchange.receiver.didReceive(response)
        }
        exchange.receiver.didComplete(with: error)
    }
}

extension URLSessionTransport {
    /// The largest body file sent from memory rather than streamed from disk, on Linux.
    static let inMemoryUploadLimit = 16 << 20

    /// The request to hand URLSession, with its body file or a new stream of its body, and the
    /// file to upload with `uploadTask(with:fromFile:)`, if any. Throws what making or reading
    /// the stream threw.
    ///
    /// On Linux, never a file: FoundationNetworking reads a file body asynchronously and pauses
    /// the transfer while it waits, and cancelling such an upload crashes the process (a `try!`
    /// on pausing a handle already gone) within a few hundred cancels. A body held in memory or
    /// read from a stream never pauses, and survives the same storm. A file or a stream of known
    /// length up to ``inMemoryUploadLimit`` is read into memory and goes out with its
    /// `Content-Length`; a larger one is streamed, which FoundationNetworking can only send
    /// chunked, without a length.
    static func prepare(_ request: TransportRequest) throws -> (URLRequest, uploadFile: URL?) {
        var urlRequest = request.urlRequest
        if let stream = request.bodyStream {
            #if canImport(FoundationNetworking)
            if let length = stream.length, length <= inMemoryUploadLimit {
                urlRequest.httpBody = try Self.read(stream.makeStream(), length: Int(length))
                return (urlRequest, nil)
            }
            #endif
            urlRequest.httpBodyStream = try stream.makeStream()
            return (urlRequest, nil)
        }
        guard let file = request.bodyFile else { return (urlRequest, nil) }
        #if canImport(FoundationNetworking)
        let size = fileSize(of: file) ?? .max
        if size <= inMemoryUploadLimit, let body = try? Data(contentsOf: file) {
            urlRequest.httpBody = body
        } else {
            urlRequest.httpBodyStream = InputStream(url: file)
        }
        return (urlRequest, nil)
        #else
        return (urlRequest, file)
        #endif
    }

    /// What ``prepare(_:)`` makes of `request`, or `nil` once `receiver` has heard why it failed.
    private static func prepared(_ request: TransportRequest, reportingTo receiver: any TransportReceiver) -> (URLRequest, URL?)? {
        do {
            return try prepare(request)
        } catch {
            receiver.didComplete(with: error)
            return nil
        }
    }

    /// The `length` bytes of `stream`; throws ``BodyLengthMismatch`` when it ends before them or
    /// goes on after them, and what it failed with when it fails.
    private static func read(_ stream: InputStream, length: Int) throws -> Data {
        stream.open()
        defer { stream.close() }
        var body = Data(count: length)
        var filled = 0
        try body.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) in
            let bytes = buffer.bindMemory(to: UInt8.self)
            while filled < length {
                guard let base = bytes.baseAddress else { break }
                let count = stream.read(base + filled, maxLength: length - filled)
                guard count >= 0 else { throw stream.streamError ?? CocoaError(.fileReadUnknown) }
                // Asked at the end of a stream without an error, FoundationNetworking's
                // `streamError` crashes: an early end is told apart by the count alone.
                guard count > 0 else { throw BodyLengthMismatch(statedLength: Int64(length), actualLength: Int64(filled)) }
                filled += count
            }
        }
        var extra: UInt8 = 0
        guard stream.read(&extra, maxLength: 1) <= 0 else {
            throw BodyLengthMismatch(statedLength: Int64(length), actualLength: Int64(length) + 1)
        }
        return body
    }
}
