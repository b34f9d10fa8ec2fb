import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The delegate of a ``URLSessionTransport``'s own session: starts each request's task when its
/// origin has room, and passes the task's events to the request's receiver.
///
/// On Linux, requests to a plain-HTTP origin beyond the session's connections per host wait
/// here (``HostAdmission``), not in FoundationNetworking, which takes every task at once: a
/// request that times out while it waits is then dropped for nothing, where cancelling thousands
/// of tasks inside FoundationNetworking kept both cores busy and held back every callback. Apple's URLSession gets every task at once.
final class SessionExchanges: NSObject, URLSessionDataDelegate, Sendable {
    private struct Exchange {
        let request: SessionRequest
        /// The body as FoundationNetworking reads it, when it is Tern's stream: read here only
        /// once the task has completed, when FoundationNetworking is done with it.
        nonisolated(unsafe) let body: SegmentStream?
        /// Whether the receiver said stop: the task is being cancelled, and hears no more chunks.
        var isStopping = false
        /// Whether the receiver has heard the head.
        var hasHead = false
        /// Whether the task is suspended because the receiver said pause (Apple platforms only).
        var isPaused = false
        /// The resumes asked for so far: a pause decided before the latest is not applied (the
        /// reader made room between the receiver's answer and the suspend).
        var resumes = 0
        /// Whether its server showed none of the pinned keys (Apple platforms only).
        var failedPins = false
        /// Why Tern ended its task, if it did (Linux only): its response's head was refused, or
        /// FoundationNetworking asked for its body again.
        var ending: URLError?
        /// The body's announced length, once the head has come, and how much of it has.
        var announcedLength: Int64?
        var receivedLength: Int64 = 0
        /// Whether Tern cancelled the task or refused its redirect first.
        var redirectOrCancel = RedirectOrCancel()
        /// The `401` whose challenge Tern declined, which is the task's response (Linux only).
        var declinedChallenge: HTTPURLResponse?

        /// Whether the task is about to complete on its own: its whole announced body has come,
        /// or its 3xx is on its way as the response.
        var isEnding: Bool { redirectOrCancel.isRedirectRefused || announcedLength.map { receivedLength >= $0 } ?? false }
    }

    private let exchanges = Locked([Int: Exchange]())
    /// The requests running and waiting per origin.
    private let admission: Locked<HostAdmission<SessionRequest>>
    /// The bodies read into memory, and the requests waiting to read theirs (Linux only).
    private let memory = Locked(BodyMemoryBudget<SessionRequest>())
    /// Whether requests are counted at all: not where the session takes them all.
    private let countsOrigins: Bool
    /// Where the session calls this delegate; held here, since an operation queue does not
    /// retain its underlying queue.
    let queue = DispatchQueue(label: "tern.transport", qos: .userInteractive)
    /// The keys every server of the session must show one of (Apple platforms only); none when
    /// empty.
    let pins: [String]

    /// Counts requests to each plain-HTTP origin against `connectionsPerHost`, or none if `nil`;
    /// checks every server against `pins`, if any.
    init(connectionsPerHost: Int?, pins: [String] = []) {
        self.pins = pins
        // Not an optional `Locked`: made from `Optional.map`, one crashed the process.
        admission = Locked(HostAdmission(limit: connectionsPerHost ?? 1))
        countsOrigins = connectionsPerHost != nil
    }

    /// Sends `request` on `session` now, or once its origin has room.
    func send(_ request: TransportRequest, to receiver: any TransportReceiver, on session: URLSession) -> any TransportTask {
        let origin = countsOrigins ? request.urlRequest.url?.admissionOrigin : nil
        let sent = SessionRequest(request, receiver: receiver, origin: origin, session: session, exchanges: self)
        if admission.withLock({ $0.admit(sent, origin: origin) }) { start(sent) }
        return sent
    }

    /// Starts the task of a request its origin admitted, once its body fits in memory
    /// (`holdsItsBody` when the budget has counted it already); one that ends before it has a
    /// task hands its place on to the next, and so on, in a loop: thousands waiting whose bodies
    /// all fail to open (their files gone, no descriptor left) end one after another, not each
    /// inside the last, which ran the thread out of stack.
    private func start(_ sent: SessionRequest, holdsItsBody: Bool = false) {
        var (next, holds) = (Optional(sent), holdsItsBody)
        while let sent = next {
            // Sized now, just before it is read, not when it was sent: a file may have changed
            // while it waited for its origin.
            let bytes = URLSessionTransport.bytesReadIntoMemory(for: sent.request.body)
            guard holds || memory.withLock({ $0.admit(sent, bytes: bytes) }) else {
                // Waits until a body held ends (``startLater(_:holdsItsBody:)``); one cancelled
                // as it joined the line, which its cancel did not find there, leaves it.
                if sent.isCancelled, withdraw(sent) { sent.receiver.didComplete(with: URLError(.cancelled)) }
                return
            }
            guard !begin(sent, on: sent.session) else { return }
            letGoOfBody(of: sent)
            (next, holds) = (admission.withLock { $0.release(origin: sent.origin) }, false)
        }
    }

    /// Starts `sent`, which its origin and the budget admitted, away from the delegate's queue:
    /// reading a body of up to 16 MiB there would hold back every task's events.
    private func startLater(_ sent: SessionRequest, holdsItsBody: Bool) {
        DispatchQueue.global(qos: .userInitiated).async { [self] in start(sent, holdsItsBody: holdsItsBody) }
    }

    /// `sent`'s body, if it held one in memory, is no longer held: those that waited for room
    /// start.
    private func letGoOfBody(of sent: SessionRequest) {
        for next in memory.withLock({ $0.release(sent) }) { startLater(next, holdsItsBody: true) }
    }

    /// Gives the session the task of `sent`; `false` when it ended before it had one.
    private func begin(_ sent: SessionRequest, on session: URLSession) -> Bool {
        guard !sent.isCancelled else {
            sent.receiver.didComplete(with: URLError(.cancelled))
            return false
        }
        // Cancelled while it is prepared: it ends with what failed, if anything did (the
        // receiver is told once), or its task is cancelled as it starts.
        guard let (urlRequest, uploadFile) = URLSessionTransport.prepared(sent.request, reportingTo: sent.receiver) else { return false }
        let task = if let uploadFile {
            session.uploadTask(with: urlRequest, fromFile: uploadFile)
        } else {
            session.dataTask(with: urlRequest)
        }
        let exchange = Exchange(request: sent, body: urlRequest.httpBodyStream as? SegmentStream)
        exchanges.withLock { $0[task.taskIdentifier] = exchange }
        task.resume()
        // Cancelled while the task was made: it ends like any cancelled task.
        if !sent.started(task) { cancel(task) }
        return true
    }

    /// `sent` has ended: its body's room is free, and the next request waiting for its origin
    /// starts.
    private func ended(_ sent: SessionRequest) {
        letGoOfBody(of: sent)
        guard let next = admission.withLock({ $0.release(origin: sent.origin) }) else { return }
        startLater(next, holdsItsBody: false)
    }

    /// How many tasks Tern has given the session that have not completed.
    var tasksInFlight: Int { exchanges.withLock(\.count) }

    /// Takes `sent` out of its origin's line, or out of the line for memory, where it held its
    /// origin's place, which the next then takes; whether it was waiting in either.
    func withdraw(_ sent: SessionRequest) -> Bool {
        if let admitted = memory.withLock({ $0.withdraw(sent) }) {
            for next in admitted { startLater(next, holdsItsBody: true) }
            ended(sent)
            return true
        }
        return admission.withLock { $0.withdraw(sent, origin: sent.origin) }
    }

    /// Whether `sent` waits in its origin's line, or for room for its body in memory.
    func isWaiting(_ sent: SessionRequest) -> Bool {
        admission.withLock { $0.isWaiting(sent, origin: sent.origin) } || memory.withLock { $0.isWaiting(sent) }
    }

    /// Cancels `task` while it is open. FoundationNetworking crashes now and then when a cancel
    /// races the task's own completion (its task registry removes the task twice): a cancel that
    /// comes after the completion was delivered is skipped, and so is one that comes once the
    /// whole announced body has arrived, or the redirect was refused, when the completion is on
    /// its way.
    func cancel(_ task: URLSessionTask) {
        #if canImport(FoundationNetworking)
        // On the delegate's queue. FoundationNetworking reports a cancel from a block it queues
        // after checking the task, and crashes if the task's completion removed the task in
        // between; that completion passes through this queue first, where it cannot come between.
        queue.async { [self] in cancelWhileOpen(task) }
        #else
        cancelWhileOpen(task)
        #endif
    }

    private func cancelWhileOpen(_ task: URLSessionTask) {
        let isOpen = exchanges.withLock { exchanges in
            guard let exchange = exchanges[task.taskIdentifier], !exchange.isEnding else { return false }
            return exchanges[task.taskIdentifier]?.redirectOrCancel.cancel() ?? false
        }
        if isOpen { task.cancel() }
    }

    /// The receiver of `task`, unless it has said stop.
    private func receiver(of task: URLSessionTask) -> (any TransportReceiver)? {
        exchanges.withLock { receiverAndResumes(of: task, in: $0).0 }
    }

    /// Stops `task` when its receiver says so, once; suspends it when the receiver says pause,
    /// unless a resume has come since the receiver was asked (`resumesBefore` resumes then).
    private func obey(_ decision: TransferDecision, for task: URLSessionTask, resumesBefore: Int) {
        switch decision {
        case .proceed:
            break
        case .stop:
            exchanges.withLock { $0[task.taskIdentifier]?.isStopping = true }
            task.cancel()
        case .pause:
            // FoundationNetworking's suspend does not hold a running task back (tried: a large
            // body arrived whole, suspended after its first MiB): there the task reads on.
            #if !canImport(FoundationNetworking)
            // Under the lock, and only if no resume has come since the receiver answered: one that
            // came first would leave the task suspended for ever.
            exchanges.withLock { exchanges in
                guard let exchange = exchanges[task.taskIdentifier], !exchange.isStopping, !exchange.isPaused,
                      exchange.resumes == resumesBefore else { return }
                exchanges[task.taskIdentifier]?.isPaused = true
                task.suspend()
            }
            #endif
            break
        }
    }

    /// The receiver of `task`, unless it has said stop, and the resumes asked for so far.
    private func receiverAndResumes(of task: URLSessionTask, in exchanges: [Int: Exchange]) -> ((any TransportReceiver)?, Int) {
        let exchange = exchanges[task.taskIdentifier]
        return (exchange.flatMap { $0.isStopping ? nil : $0.request.receiver }, exchange?.resumes ?? 0)
    }

    /// Resumes `task` if its receiver paused it.
    func resumeReceiving(_ task: URLSessionTask) {
        exchanges.withLock { exchanges in
            exchanges[task.taskIdentifier]?.resumes += 1
            guard exchanges[task.taskIdentifier]?.isPaused == true else { return }
            exchanges[task.taskIdentifier]?.isPaused = false
            task.resume()
        }
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
        #if canImport(FoundationNetworking)
        // FoundationNetworking reads a body whose lengths disagree, or that is framed two ways, as
        // its libcurl picks, and waits on a 101: refused as CurlTransport refuses them.
        if let problem = ResponseHeadCheck.problem(with: http) {
            let refusal = ResponseHeadCheck.refusal(problem, url: dataTask.originalRequest?.url)
            exchanges.withLock { exchanges in
                exchanges[dataTask.taskIdentifier]?.ending = refusal
                exchanges[dataTask.taskIdentifier]?.isStopping = true
            }
            return cancel(dataTask)
        }
        #endif
        let (receiver, resumes) = exchanges.withLock { exchanges -> ((any TransportReceiver)?, Int) in
            exchanges[dataTask.taskIdentifier]?.hasHead = true
            // Bytes arrive decompressed: only an unencoded body's length can be counted against.
            let encoding = http.value(forHTTPHeaderField: "Content-Encoding")?.lowercased() ?? "identity"
            if http.expectedContentLength >= 0, encoding == "identity" {
                exchanges[dataTask.taskIdentifier]?.announcedLength = http.expectedContentLength
            }
            return receiverAndResumes(of: dataTask, in: exchanges)
        }
        if let receiver { obey(receiver.didReceive(ResponseHead(http)), for: dataTask, resumesBefore: resumes) }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let (receiver, resumes) = exchanges.withLock { exchanges in
            exchanges[dataTask.taskIdentifier]?.receivedLength += Int64(data.count)
            return receiverAndResumes(of: dataTask, in: exchanges)
        }
        guard let receiver else { return }
        obey(receiver.didReceive(data), for: dataTask, resumesBefore: resumes)
    }

    #if canImport(FoundationNetworking)
    /// FoundationNetworking asks for the body again when its libcurl sends a request again on a
    /// new connection (the kept-alive one it reused closed before any answer). It takes a new
    /// stream only for a stream body and ends the process if given one for a body from memory;
    /// given none, it sends nothing and the request waits for its timeout. So it gets none, and
    /// the task ends at once, as connection lost: whether the request goes again is the retry
    /// policy's to decide, as over libcurl for a POST. Called on FoundationNetworking's own
    /// queue, which a cancel waits for: the cancel goes from another.
    func urlSession(_ session: URLSession, task: URLSessionTask, needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void) {
        var info: [String: Any] = [
            NSLocalizedDescriptionKey: "the connection closed before any answer came, and FoundationNetworking cannot send the body again",
        ]
        if let url = task.originalRequest?.url { info[NSURLErrorFailingURLErrorKey] = url }
        let ending = URLError(.networkConnectionLost, userInfo: info)
        exchanges.withLock { exchanges in
            exchanges[task.taskIdentifier]?.ending = ending
            exchanges[task.taskIdentifier]?.isStopping = true
        }
        completionHandler(nil)
        DispatchQueue.global().async { [self] in cancel(task) }
    }
    #endif

    /// Tern follows redirects itself, through its pipeline: the session follows none, and the
    /// 3xx is the response.
    /// A task Tern cancelled first is not answered: its cancel ends it (``RedirectOrCancel``).
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        if exchanges.withLock({ $0[task.taskIdentifier]?.redirectOrCancel.refuseRedirect() ?? true }) { completionHandler(nil) }
    }

    #if canImport(Security) && canImport(CryptoKit) && !canImport(FoundationNetworking)
    /// Checks the server of each new connection against the session's pins, if it has any.
    /// (Called for a task since the session has no session-wide handler; a connection reused
    /// is one checked already, and only tasks with the same pins share this session.)
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard !pins.isEmpty, challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust,
              let trust = challenge.protectionSpace.serverTrust else {
            return completionHandler(.performDefaultHandling, nil)
        }
        guard ServerTrustPinning.accepts(trust, pins: pins) else {
            exchanges.withLock { $0[task.taskIdentifier]?.failedPins = true }
            return completionHandler(.cancelAuthenticationChallenge, nil)
        }
        completionHandler(.useCredential, URLCredential(trust: trust))
    }
    #endif

    #if canImport(FoundationNetworking)
    /// A `401` with `WWW-Authenticate: Basic` is the response, as over libcurl: Tern answers
    /// it itself (the delegate refreshes and signs again). FoundationNetworking asks for a
    /// credential, and with none to use (`performDefaultHandling`, the default) leaves the task
    /// waiting for ever (swift-corelibs-foundation #5456), until the request's timeout. Declined,
    /// the task is cancelled, and its completion hands the `401` on.
    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let response = (challenge.failureResponse ?? task.response) as? HTTPURLResponse
        exchanges.withLock { $0[task.taskIdentifier]?.declinedChallenge = response }
        completionHandler(.cancelAuthenticationChallenge, nil)
    }
    #endif

    /// Apple's URLSession measures each task; FoundationNetworking never calls this.
    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
        guard let receiver = exchanges.withLock({ $0[task.taskIdentifier]?.request.receiver }),
              let transaction = metrics.transactionMetrics.last, let start = transaction.fetchStartDate else { return }
        let since = { (date: Date?) in date.map { $0.timeIntervalSince(start) } }
        receiver.didCollect(TransferMetrics(
            url: transaction.request.url, statusCode: (transaction.response as? HTTPURLResponse)?.statusCode,
            nameLookup: since(transaction.domainLookupEndDate), connect: since(transaction.connectEndDate),
            tlsHandshake: since(transaction.secureConnectionEndDate), firstByte: since(transaction.responseStartDate),
            total: since(transaction.responseEndDate), bytesSent: transaction.countOfRequestBodyBytesSent,
            bytesReceived: transaction.countOfResponseBodyBytesReceived, reusedConnection: transaction.isReusedConnection,
            httpVersion: transaction.networkProtocolName.map { $0 == "h2" ? "HTTP/2" : $0 == "h3" ? "HTTP/3" : $0.uppercased() }
        ))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let exchange = exchanges.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        let receiver = exchange.request.receiver
        // FoundationNetworking skips the head of a 3xx without a Location; the task has it.
        if !exchange.hasHead, error == nil, exchange.ending == nil, let response = task.response as? HTTPURLResponse {
            _ = receiver.didReceive(ResponseHead(response))
        }
        // A declined challenge's cancel, not Tern's: the 401 was the answer.
        var error = error
        if let challenged = exchange.declinedChallenge, !exchange.redirectOrCancel.isCancelled, !exchange.isStopping, exchange.ending == nil {
            if !exchange.hasHead { _ = receiver.didReceive(ResponseHead(challenged)) }
            error = nil
        }
        // A body that broke its length stopped the upload; FoundationNetworking says only that
        // the transfer was aborted. (Only Tern's own stream is asked: FoundationNetworking's
        // crashes when asked for its error at its end.)
        #if os(Linux)
        error = error.map { CurlCode.certificateRefusal(in: $0) ?? CurlCode.brokenChunkFraming(in: $0) ?? $0 }
        #endif
        receiver.didComplete(with: exchange.failedPins ? PinnedKeyMismatch(pins: pins) : exchange.ending ?? error.map { exchange.body?.streamError ?? $0 })
        ended(exchange.request)
    }
}
