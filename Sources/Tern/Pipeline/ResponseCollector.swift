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
///
/// What the exchange has brought is an ``ExchangeState`` in the request's state machine, behind
/// the request's one lock: the collector keeps none of its own.
final class ResponseCollector: EarlierExchangeReceiver {
    private let limit: Int?
    /// The request body's length, when Tern knows it and the transport may not.
    private let uploadLength: Int64?
    /// Where an accepted body goes: a head that opens the stream is judged by the request.
    private let sink: BodySink
    private let progress: ProgressChannel
    /// Where a streamed head is judged when that runs the app's code (validation, the
    /// delegate's refresh check, plugins), which may wait for another request through the same
    /// transport: never on the transport's thread, which that request needs. `nil` to judge it
    /// as it arrives.
    private let judgesHeadOn: DispatchQueue?
    /// The request whose state holds the exchange's, behind its one lock; and the attempt, as sent.
    private let request: RequestExecution
    private let sent: SentAttempt

    init(_ sink: BodySink, for request: RequestExecution, sent: SentAttempt, limit: Int?, uploadLength: Int64? = nil,
         progress: ProgressChannel, judgesHeadOn: DispatchQueue? = nil) {
        self.request = request
        self.sent = sent
        self.sink = sink
        self.limit = limit
        self.judgesHeadOn = if case .stream = sink { judgesHeadOn } else { nil }
        self.uploadLength = uploadLength
        self.progress = progress
    }

    /// Runs `body` on the exchange's state, under the request's lock; `nil` once the request has
    /// moved on to another attempt.
    private func exchange<Result: Sendable>(_ body: (inout ExchangeState) -> Result) -> Result? {
        request.collecting(sent.attempt, body)
    }

    func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {
        // Nothing is reported of an exchange that has ended: its request may have settled.
        guard exchange({ state in
            state.sent = totalSent
            return !state.hasEnded
        }) == true else { return }
        // FoundationNetworking sends a stream without saying how long it is.
        progress.report(TransferProgress(direction: .upload, completedBytes: totalSent, totalBytes: totalExpected ?? uploadLength))
    }

    /// The exchange's task: resumed here once a head judged elsewhere is, or a download's file
    /// has opened (kept only then).
    func attach(_ task: any TransportTask) {
        guard judgesHeadOn != nil || file != nil || sink.stream != nil else { return }
        if let owed = exchange({ $0.attach(task) }) ?? nil { Self.obey(owed, task) }
    }

    func didReceive(_ head: ResponseHead) -> TransferDecision {
        // One head per exchange (judged again elsewhere, a second took the end from the first).
        // One of an attempt the request has moved past belongs to nothing, and stops its transfer.
        guard exchange({ [judgesHeadOn] in $0.headCame(judgedElsewhere: judgesHeadOn != nil) }) == true else { return .stop }
        guard let judgesHeadOn else {
            if let decision = judge(head) { return decision }
            // The download's file waits for a descriptor: what comes meanwhile is held.
            exchange { $0.holdWhileTheFileWaits() }
            openFileLater(for: head, after: 10)
            return .pause
        }
        // A stream has no file to wait for.
        judgesHeadOn.async { [self] in goOn(after: judge(head) ?? .stop) }
        return .pause
    }

    /// Takes what came while the head was judged, in order, as it would have come (more may
    /// come as it is taken), then has the task go on as `decision` says: a stream that is full
    /// pauses the transfer, and resumes it once read.
    private func goOn(after decision: TransferDecision) {
        var paused = false
        while true {
            let (chunks, end) = exchange { $0.takeHeld() } ?? ([], nil)
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

    /// Opens the download's file for `head` after `delay` milliseconds, the process having had
    /// no descriptor for it, as a request waits for a socket: the transfer held meanwhile, until
    /// the file opens, the exchange fails, or the request ends (its timeout, a cancel).
    private func openFileLater(for head: ResponseHead, after delay: Int) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(delay)) { [self] in
            guard !request.hasEnded, exchange({ $0.hasFailedWhileJudged }) == false else { return goOn(after: .stop) }
            guard let decision = judge(head) else { return openFileLater(for: head, after: min(delay * 2, 200)) }
            goOn(after: decision)
        }
    }

    /// Has the task go on receiving or stop, or owes it that until it is attached.
    private func obey(_ decision: TransferDecision) {
        if let task = exchange({ $0.owe(decision) }) ?? nil { Self.obey(decision, task) }
    }

    /// Resumes `task`, or cancels it if `decision` is to stop.
    private static func obey(_ decision: TransferDecision, _ task: any TransportTask) {
        if decision == .stop { task.cancel() } else { task.resumeReceiving() }
    }

    /// Takes `head` as the stream's, if it opens it, or as the head of the body collected here;
    /// `nil` when it goes to the download's file, which no descriptor was free to open.
    private func judge(_ head: ResponseHead) -> TransferDecision? {
        if case .stream = sink {
            // What was measured so far goes with the head; what the end measures replaces it.
            if let stream = request.openStream(head, measured: exchange({ $0.takeMetrics() }) ?? nil, of: sent) {
                exchange { $0.open(stream, with: head) }
                return .proceed
            }
            // A head that does not open the stream (a refusal, a redirect) is taken with the body
            // that comes within a second: one that trickles held the refresh, or the status's
            // error, back until the request's timeout. A 3xx not followed at its head may be the
            // answer, body and all: its body is read whole, or fails typed, never cut short.
            if !(300..<400).contains(head.statusCode) || request.context.redirectPolicy.followsAtItsHead(head) {
                DispatchQueue.global().asyncAfter(deadline: .now() + 1) { [self] in endWithTheBodySoFar() }
            }
        }
        var target = DownloadFile.Target.memory
        if let file {
            do {
                target = try file.target(for: head)
            } catch let refused as URLError {
                // The server's answer, not the disk, is at fault.
                exchange { $0.stopped = refused }
                return .stop
            } catch where OwnFiles.lackedADescriptor(error) {
                return nil
            } catch {
                exchange { $0.stopped = ExchangeState.writeFailure(error, writing: file) }
                return .stop
            }
        }
        // A HEAD's answer, a 1xx, 204 or 304 carries no body, whatever length it states.
        let bodyless = ResponseHead.hasNoBody(statusCode: head.statusCode, method: sent.request.httpMethod)
        guard case .kept(let started) = exchange({ [limit] in $0.accept(head, into: target, limit: limit, fileLimit: file?.maximumSize, bodyless: bodyless) })
        else { return .stop }
        if let started { progress.report(started) }
        return .proceed
    }

    func didReceive(_ chunk: Data) -> TransferDecision {
        // Most exchanges never judge a head elsewhere, nor wait to open a file: no second look
        // at the state per chunk.
        guard judgesHeadOn != nil || file != nil else { return take(chunk) }
        return (exchange { [file, sink] in $0.hold(chunk, file: file, stream: sink.stream) } ?? nil) ?? take(chunk)
    }

    /// Takes `chunk` into the stream, the file or the body.
    private func take(_ chunk: Data) -> TransferDecision {
        switch exchange({ [limit, file] in $0.take(chunk, limit: limit, file: file) }) ?? .stop {
        case .stream(let stream):
            return stream.offer(chunk)
        case .kept(let received):
            if let received { progress.report(received) }
            return .proceed
        case .stop:
            return .stop
        }
    }

    /// The download's file, for a download.
    private var file: DownloadFile? { sink.file }

    func didCollect(_ metrics: TransferMetrics) {
        exchange { $0.metrics = metrics }
    }

    func didEndEarlierExchange(_ metrics: TransferMetrics?) -> Bool {
        request.earlierExchangeEnded(sent.attempt, metrics: metrics)
    }

    /// Ends the exchange with the body that came so far, if it has not ended, and stops its task.
    private func endWithTheBodySoFar() {
        let task = exchange { $0.hasEnded ? nil : $0.task } ?? nil
        didComplete(with: nil)
        task?.cancel()
    }

    func didComplete(with error: (any Error)?) {
        // An end of an attempt the request has moved past is not heard.
        guard let state = exchange({ $0.endCame(error) }) ?? nil else { return }
        var error = error
        if error == nil, state.stream == nil, state.isToFile, let file {
            // A body cut short is the network's fault; bytes the disk refused (the last ones,
            // gathered until the end), the file's, as a refusal mid-body is.
            do {
                try file.endOfBody()
            } catch let short as URLError {
                error = short
            } catch let failure {
                error = ExchangeState.writeFailure(failure, writing: file)
            }
        }
        // Why the collector stopped the transfer comes before the error stopping it caused.
        let failure = (state.stopped ?? error).map { error in
            ExchangeFailure(error: error, head: state.head, receivedBytes: Int(state.received),
                            cutShort: state.expectedLength.map { state.offset + state.received < $0 } ?? false)
        }
        // The request settled when the stream opened; the body's end is the stream's.
        if let stream = state.stream { return stream.finish(after: failure, metrics: state.metrics) }
        let result: Result<TransportResponse, ExchangeFailure> = if let failure {
            .failure(failure)
        } else if let head = state.head {
            .success(TransportResponse(head: head, body: state.body))
        } else {
            .failure(ExchangeFailure(error: URLError(.badServerResponse)))
        }
        request.ended(result, metrics: state.metrics, earlier: state.earlier, of: sent)
    }
}

/// Why a download's attempt was stopped: the server did not go on where asked (it answered 416,
/// or a range other than the one asked for, or for a changed file, or the byte held and asked
/// for again came back different), so the attempt starts over from the first byte.
struct DownloadRestart: Error, CustomStringConvertible {
    var description: String { "The server did not send the rest of the download from where it stopped; starting over." }
}
