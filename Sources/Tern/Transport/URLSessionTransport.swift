import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default transport: a `URLSession`.
///
/// By default each API gets a session of its own, made from `URLSessionConfiguration.default`.
/// The session's delegate collects each body as it arrives and stops a transfer the moment its
/// body passes the request's ``TransportRequest/maximumBodySize`` (counted after
/// decompression). Its calls run on one serial queue, since a task's chunks must be appended in
/// order, and each exchange is completed (validated and parsed) right there: a hop to a
/// concurrent queue cost more than parsing in parallel gained (measured with `EndToEndAB`:
/// 1.13× raw URLSession's time per request with the hop, 1.02× without). When the transport is
/// released (after the last request that uses it has finished) that session is invalidated.
///
/// A session passed in stays the caller's: it is used as it is and never invalidated, and since
/// Tern is not its delegate, a body over the limit is refused only once it has arrived whole.
public final class URLSessionTransport: Transport {
    /// The session requests go through.
    public let session: URLSession
    /// The exchanges in flight, when the session is ours.
    private let exchanges: ExchangeTable?

    /// Creates a transport over a new session made from `configuration`.
    public init(configuration: URLSessionConfiguration = .default) {
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

    /// Creates a transport over a session of the caller's, which is never invalidated here.
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

    public func send(
        _ request: TransportRequest,
        completion: @escaping @Sendable (Result<TransportResponse, any Error>) -> Void
    ) -> any TransportTask {
        guard let exchanges else { return sendThroughCallersSession(request, completion: completion) }
        let (urlRequest, uploadFile) = Self.prepare(request)
        let task = if let uploadFile {
            session.uploadTask(with: urlRequest, fromFile: uploadFile)
        } else {
            session.dataTask(with: urlRequest)
        }
        exchanges.begin(task, limit: request.maximumBodySize, completion: completion)
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

    /// A session that is not ours has no delegate of ours: its completion handlers get whole bodies.
    private func sendThroughCallersSession(
        _ request: TransportRequest,
        completion: @escaping @Sendable (Result<TransportResponse, any Error>) -> Void
    ) -> any TransportTask {
        let handler: @Sendable (Data?, URLResponse?, (any Error)?) -> Void = { data, response, error in
            if let error {
                completion(.failure(error))
            } else if let response = response as? HTTPURLResponse {
                completion(.success(TransportResponse(httpResponse: response, body: data ?? Data())))
            } else {
                completion(.failure(URLError(.badServerResponse)))
            }
        }
        let (urlRequest, uploadFile) = Self.prepare(request)
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

/// The session's delegate: each task's response and body so far, by task.
private final class ExchangeTable: NSObject, URLSessionDataDelegate, Sendable {
    /// One task's progress.
    private struct Exchange {
        let completion: @Sendable (Result<TransportResponse, any Error>) -> Void
        let limit: Int?
        var response: HTTPURLResponse?
        var body = Data()
        /// Why Tern stopped the transfer, reported instead of the cancellation it causes.
        var stopped: (any Error)?
    }

    private let exchanges = Locked([Int: Exchange]())
    /// Where the session calls this delegate; held here, since an operation queue does not
    /// retain its underlying queue.
    let queue = DispatchQueue(label: "tern.transport", qos: .userInteractive)

    func begin(_ task: URLSessionTask, limit: Int?, completion: @escaping @Sendable (Result<TransportResponse, any Error>) -> Void) {
        exchanges.withLock { $0[task.taskIdentifier] = Exchange(completion: completion, limit: limit) }
    }

    /// Whether `task` has not completed yet.
    func isOpen(_ task: URLSessionTask) -> Bool {
        exchanges.withLock { $0[task.taskIdentifier] != nil }
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let http = response as? HTTPURLResponse
        // A declared length over the limit stops the transfer before any of the body comes.
        // Only for an unencoded body: the limit counts decompressed bytes.
        let declared = http?.value(forHTTPHeaderField: "Content-Encoding") == nil ? response.expectedContentLength : -1
        let tooLarge = exchanges.withLock { exchanges -> Bool in
            guard var exchange = exchanges[dataTask.taskIdentifier] else { return false }
            exchange.response = http
            if let limit = exchange.limit, declared > limit {
                exchange.stopped = BodyLimitExceeded(limit: limit, receivedBytes: 0, declaredLength: Int(declared))
            }
            exchanges[dataTask.taskIdentifier] = exchange
            return exchange.stopped != nil
        }
        completionHandler(.allow)
        if tooLarge { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let tooLarge = exchanges.withLock { exchanges -> Bool in
            guard var exchange = exchanges.removeValue(forKey: dataTask.taskIdentifier) else { return false }
            defer { exchanges[dataTask.taskIdentifier] = exchange }  // taken out, so the append does not copy
            guard exchange.stopped == nil else { return false }
            if let limit = exchange.limit, exchange.body.count + data.count > limit {
                exchange.stopped = BodyLimitExceeded(limit: limit, receivedBytes: exchange.body.count + data.count, declaredLength: nil)
                exchange.body = Data()
                return true
            }
            exchange.body.append(data)
            return false
        }
        if tooLarge { dataTask.cancel() }
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
        Self.complete(exchange, response: exchange.response ?? task.response as? HTTPURLResponse, error: error)
    }

    private static func complete(_ exchange: Exchange, response: HTTPURLResponse?, error: (any Error)?) {
        if let stopped = exchange.stopped {
            exchange.completion(.failure(stopped))
        } else if let error, let response, (error as? URLError)?.code != .cancelled {  // a cancel stays a cancel
            exchange.completion(.failure(TransferInterrupted(response: response, receivedBytes: exchange.body.count, underlying: error)))
        } else if let error {
            exchange.completion(.failure(error))
        } else if let response {
            exchange.completion(.success(TransportResponse(httpResponse: response, body: exchange.body)))
        } else {
            exchange.completion(.failure(URLError(.badServerResponse)))
        }
    }
}

extension URLSessionTransport {
    /// The largest body file sent from memory rather than streamed from disk, on Linux.
    static let inMemoryUploadLimit = 16 << 20

    /// The request to hand URLSession, with its body file, and the file to upload with
    /// `uploadTask(with:fromFile:)`, if any.
    ///
    /// On Linux, never a file: FoundationNetworking reads a file body asynchronously and pauses
    /// the transfer while it waits, and cancelling such an upload crashes the process (a `try!`
    /// on pausing a handle already gone) within a few hundred cancels. A body held in memory or
    /// read from a stream never pauses, and survives the same storm. A file up to
    /// ``inMemoryUploadLimit`` is read into memory and goes out with its `Content-Length`; a
    /// larger one is streamed, which FoundationNetworking can only send chunked, without a length.
    static func prepare(_ request: TransportRequest) -> (URLRequest, uploadFile: URL?) {
        guard let file = request.bodyFile else { return (request.urlRequest, nil) }
        #if canImport(FoundationNetworking)
        var urlRequest = request.urlRequest
        let size = ((try? FileManager.default.attributesOfItem(atPath: file.path)[.size]) as? NSNumber)?.intValue ?? .max
        if size <= inMemoryUploadLimit, let body = try? Data(contentsOf: file) {
            urlRequest.httpBody = body
        } else {
            urlRequest.httpBodyStream = InputStream(url: file)
        }
        return (urlRequest, nil)
        #else
        return (request.urlRequest, file)
        #endif
    }
}
