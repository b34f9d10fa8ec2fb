import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Hears one exchange's events from the transport and gathers the response, for any transport
/// alike: in memory within the request's body limit (a declared length over the limit stops the
/// transfer before the body, and so does the chunk that passes it), or, for a download's
/// accepted body, into its file chunk by chunk, or a stream's into the stream. Reports the
/// transfer's progress both ways. A stream's head that the app's code judges is judged on
/// another queue, the body held (or kept here, where the transport cannot hold it) meanwhile.
final class ResponseCollector: TransportReceiver {
    private struct State {
        var head: ResponseHead?
        var body = Data()
        /// Whether the body goes to the download's file rather than to `body`.
        var isToFile = false
        /// The bytes the body started after: those a resumed download had on disk.
        var offset: Int64 = 0
        /// The body's bytes received.
        var received: Int64 = 0
        /// The body's whole length as announced (offset included), when it counts the bytes
        /// that arrive.
        var expectedLength: Int64?
        /// Why the collector stopped the transfer, reported instead of the error stopping causes.
        var stopped: (any Error)?
        /// Where an accepted streamed body goes, chunk by chunk, once its head opened it.
        var stream: StreamBuffer?
        /// What the transport measured of the exchange, if it did.
        var metrics: TransferMetrics?
        /// While the app's code judges a streamed head elsewhere: what came meanwhile.
        var judging: Judging?
        /// The exchange's task, once the transport has made it.
        var task: (any TransportTask)?
        /// What the task is to do once attached (go on receiving, or stop), the head having been
        /// judged before it was.
        var owed: TransferDecision?
        /// Whether the head has come (it is judged before ``head`` is set).
        var hasHead = false
        /// Whether the exchange has ended: what was collected is handed on, and nothing is kept.
        var hasEnded = false
    }

    /// What a transport that cannot pause sent while a streamed head was being judged: replayed
    /// in order once it is.
    private struct Judging {
        var chunks: [Data] = []
        /// The exchange's end, if it came: `error` as reported.
        var end: (any Error)??
    }

    private let limit: Int?
    /// The request body's length, when Tern knows it and the transport may not.
    private let uploadLength: Int64?
    private let sink: Sink
    private let progress: ProgressChannel
    private let completion: @Sendable (Result<TransportResponse, ExchangeFailure>, TransferMetrics?) -> Void
    /// Where a streamed head is judged when that runs the app's code (validation, the
    /// delegate's refresh check, plugins), which may wait for another request through the same
    /// transport: never on the transport's thread, which that request needs. `nil` to judge it
    /// as it arrives.
    private let judgesHeadOn: DispatchQueue?
    // The transport calls one event at a time; a head judged elsewhere is the one other thread.
    private let state = Locked(State())

    /// Where the collector puts an accepted body (see ``BodySink``).
    enum Sink {
        /// In memory, under the limit.
        case memory
        /// Into a download's file, when its head says the body is the file's.
        case file(DownloadFile)
        /// Into a stream, when the head opens it: `opens` judges the head, given what the
        /// transport measured of the exchange so far, and returns the stream if it accepts it.
        case stream(opens: @Sendable (ResponseHead, TransferMetrics?) -> StreamBuffer?)
    }

    init(_ sink: Sink, limit: Int?, uploadLength: Int64? = nil, progress: ProgressChannel, judgesHeadOn: DispatchQueue? = nil,
         completion: @escaping @Sendable (Result<TransportResponse, ExchangeFailure>, TransferMetrics?) -> Void) {
        self.sink = sink
        self.limit = limit
        self.judgesHeadOn = if case .stream = sink { judgesHeadOn } else { nil }
        self.uploadLength = uploadLength
        self.progress = progress
        self.completion = completion
    }

    func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {
        // FoundationNetworking sends a stream without saying how long it is.
        progress.report(TransferProgress(direction: .upload, completedBytes: totalSent, totalBytes: totalExpected ?? uploadLength))
    }

    /// The exchange's task: resumed here once a head judged elsewhere is (kept only then).
    func attach(_ task: any TransportTask) {
        guard judgesHeadOn != nil else { return }
        let owed = state.withLock { state in
            // An exchange that has ended needs nothing of its task; kept, the task (which holds
            // this collector) would keep it, the request and its API for ever.
            if !state.hasEnded { state.task = task }
            defer { state.owed = nil }
            return state.owed
        }
        if let owed { Self.obey(owed, task) }
    }

    func didReceive(_ head: ResponseHead) -> TransferDecision {
        // One head per exchange: a second (or one after the end) is the transport's error, and
        // ends the exchange with it. Judged again elsewhere, it took the end from the first.
        let isFirst = state.withLock { state in
            guard !state.hasHead, !state.hasEnded else {
                if state.stopped == nil { state.stopped = URLError(.badServerResponse) }
                return false
            }
            state.hasHead = true
            if judgesHeadOn != nil { state.judging = Judging() }
            return true
        }
        guard isFirst else { return .stop }
        guard let judgesHeadOn else { return judge(head) }
        judgesHeadOn.async { [self] in
            let decision = judge(head)
            // What came meanwhile, in order, as it would have come (more may come as it is
            // taken): a stream that is full pauses the transfer, and resumes it once read.
            var paused = false
            while true {
                let (chunks, end) = state.withLock { state -> ([Data], (any Error)??) in
                    let judging = state.judging ?? Judging()
                    if judging.chunks.isEmpty { state.judging = nil } else { state.judging?.chunks = [] }
                    return (judging.chunks, judging.chunks.isEmpty ? judging.end : nil)
                }
                guard chunks.isEmpty else {
                    for chunk in chunks where take(chunk) == .pause { paused = true }
                    continue
                }
                if let end { return didComplete(with: end) }
                // A stream that paused resumes the task itself.
                if decision == .stop || !paused { obey(decision == .stop ? .stop : .proceed) }
                return
            }
        }
        return .pause
    }

    /// Has the task go on receiving or stop, or owes it that until it is attached.
    private func obey(_ decision: TransferDecision) {
        let task = state.withLock { state -> (any TransportTask)? in
            if state.task == nil { state.owed = decision }
            return state.task
        }
        if let task { Self.obey(decision, task) }
    }

    /// Resumes `task`, or cancels it if `decision` is to stop.
    private static func obey(_ decision: TransferDecision, _ task: any TransportTask) {
        if decision == .stop { task.cancel() } else { task.resumeReceiving() }
    }

    /// Takes `head` as the stream's, if it opens it, or as the head of the body collected here.
    private func judge(_ head: ResponseHead) -> TransferDecision {
        if case .stream(let opens) = sink {
            // What was measured so far goes with the head; what the end measures replaces it.
            let soFar = state.withLock { state in
                defer { state.metrics = nil }
                return state.metrics
            }
            if let stream = opens(head, soFar) {
                state.withLock { state in
                    state.head = head
                    state.stream = stream
                }
                return .proceed
            }
        }
        var target = DownloadFile.Target.memory
        if let file {
            do {
                target = try file.target(for: head)
            } catch let refused as URLError {
                // The server's answer, not the disk, is at fault.
                state.withLock { $0.stopped = refused }
                return .stop
            } catch {
                state.withLock { $0.stopped = Self.writeFailure(error, writing: file) }
                return .stop
            }
        }
        let started = state.withLock { state -> TransferProgress? in
            state.head = head
            switch target {
            case .restart:
                state.stopped = DownloadRestart()
                return nil
            case .file(let offset, let total):
                state.isToFile = true
                state.offset = offset
                state.expectedLength = total
                if let limit = file?.maximumSize, let total, total > limit {
                    state.stopped = BodyLimitExceeded(limit: limit, receivedBytes: 0, declaredLength: Int(total), statusCode: head.statusCode)
                    return nil
                }
            case .memory:
                // Only an unencoded length says how large the body will be: the limit counts decompressed bytes.
                let declared = head.headers["Content-Encoding"] == nil ? head.contentLength ?? -1 : -1
                state.expectedLength = declared >= 0 ? declared : nil
                if let limit, declared > limit {
                    state.stopped = BodyLimitExceeded(limit: limit, receivedBytes: 0, declaredLength: Int(declared), statusCode: head.statusCode)
                    return nil
                }
            }
            return TransferProgress(direction: .download, completedBytes: state.offset, totalBytes: state.expectedLength)
        }
        guard let started else { return .stop }
        progress.report(started)
        return .proceed
    }

    func didReceive(_ chunk: Data) -> TransferDecision {
        // Most exchanges never judge a head elsewhere: no second look at the state per chunk.
        guard judgesHeadOn != nil else { return take(chunk) }
        let isJudging = state.withLock { state in
            state.judging?.chunks.append(chunk)
            return state.judging != nil
        }
        return isJudging ? .proceed : take(chunk)
    }

    /// Takes `chunk` into the stream, the file or the body.
    private func take(_ chunk: Data) -> TransferDecision {
        var stream: StreamBuffer?
        let received = state.withLock { state -> TransferProgress? in
            stream = state.stream
            guard state.stopped == nil, stream == nil else { return nil }
            if state.isToFile, let file {
                if let limit = file.maximumSize, state.offset + state.received + Int64(chunk.count) > limit {
                    state.stopped = BodyLimitExceeded(limit: limit, receivedBytes: Int(state.offset + state.received) + chunk.count,
                                                      statusCode: state.head?.statusCode)
                    return nil
                }
                do {
                    try file.write(chunk)
                } catch {
                    state.stopped = error is CancellationError ? URLError(.cancelled) : Self.writeFailure(error, writing: file)
                    return nil
                }
            } else if let limit, state.body.count + chunk.count > limit {
                state.stopped = BodyLimitExceeded(limit: limit, receivedBytes: state.body.count + chunk.count,
                                                  statusCode: state.head?.statusCode)
                state.body = Data()
                return nil
            } else if state.body.isEmpty, chunk.startIndex == 0 {
                state.body = chunk   // often the whole body: kept as it came, not copied
            } else {
                state.body.append(chunk)
            }
            state.received += Int64(chunk.count)
            return TransferProgress(direction: .download, completedBytes: state.offset + state.received, totalBytes: state.expectedLength)
        }
        if let stream { return stream.offer(chunk) }
        guard let received else { return .stop }
        progress.report(received)
        return .proceed
    }

    /// The download's file, for a download.
    private var file: DownloadFile? {
        if case .file(let file) = sink { file } else { nil }
    }

    /// Why the transfer stops when the download's file cannot be written.
    private static func writeFailure(_ error: any Error, writing file: DownloadFile) -> APIError {
        .fileFailed(.init(reason: .writeFailed, destination: file.destination, underlying: error))
    }

    func didCollect(_ metrics: TransferMetrics) {
        state.withLock { $0.metrics = metrics }
    }

    func didComplete(with error: (any Error)?) {
        let state = state.withLock { state -> State? in
            guard state.judging == nil else {
                state.judging?.end = .some(error)
                return nil
            }
            defer { state = State(hasEnded: true) }
            return state
        }
        guard let state else { return }
        var error = error
        if error == nil, state.stream == nil, state.isToFile, let file {
            do { try file.endOfBody() } catch let failure { error = failure }
        }
        // Why the collector stopped the transfer comes before the error stopping it caused.
        let failure = (state.stopped ?? error).map { error in
            ExchangeFailure(error: error, head: state.head, receivedBytes: Int(state.received),
                            cutShort: state.expectedLength.map { state.offset + state.received < $0 } ?? false)
        }
        // The request settled when the stream opened; the body's end is the stream's.
        if let stream = state.stream { return stream.finish(after: failure, metrics: state.metrics) }
        if let failure {
            completion(.failure(failure), state.metrics)
        } else if let head = state.head {
            completion(.success(TransportResponse(head: head, body: state.body)), state.metrics)
        } else {
            completion(.failure(ExchangeFailure(error: URLError(.badServerResponse))), state.metrics)
        }
    }
}

/// Why a download's attempt was stopped at its head: the server did not go on where asked (it
/// answered 416, or a range other than the one asked for, or for a changed file), so the
/// attempt starts over from the first byte.
struct DownloadRestart: Error, CustomStringConvertible {
    var description: String { "The server did not send the rest of the download from where it stopped; starting over." }
}
