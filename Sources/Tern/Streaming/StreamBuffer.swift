import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where a streamed response's chunks wait between the transfer and the reader: at most about
/// `capacity` bytes, past which the transfer is paused until the reader has taken half of them.
///
/// The transfer offers chunks (on the transport's thread); the reader takes them in order, and
/// waits when there are none. Whichever ends first (the transfer, the reader's cancel, the idle
/// timeout) ends both, once.
@usableFromInline
final class StreamBuffer: Sendable {
    private struct State {
        /// The chunks offered; those before `first` were taken, and hold nothing any more.
        var chunks: [Data] = []
        var first = 0
        /// The bytes waiting for the reader.
        var bytes = 0
        /// Every byte of the body the stream has had, for the error that ends it.
        var received = 0
        /// Why the stream ended, once it has: `nil` inside for a complete body.
        var end: APIError??
        var reader: CheckedContinuation<Data?, any Error>?
        var task: (any TransportTask)?
        /// The latest attempt sent, whose task alone is the stream's.
        var attempt = 0
        var isPaused = false
        /// Whether a resume is owed to a task not yet attached.
        var owesResume = false
        /// Whether the transfer is to stop: the reader is gone, or a timer ended the stream; a
        /// task attached after that is cancelled as it comes.
        var isCancelled = false
        /// When a chunk last came or the reader last took one, on the clock.
        var lastActivity: TimeInterval = 0
        var idleTimer: (any Cancellable)?
        var durationTimer: (any Cancellable)?
        /// Who hears the transfer's end, once the stream is open: told once.
        var onEnd: EndReport?
        /// The latest attempt's request, as it went out.
        var sent: URLRequest?
    }

    /// What the stream's opener is told once its transfer has ended: why the stream ended
    /// (`nil` for a whole body), and what the transport measured of the transfer, if it did.
    typealias EndReport = @Sendable (APIError?, TransferMetrics?) -> Void

    let capacity: Int
    /// What the buffer holds at most when the transport goes on sending after a pause (URLSession
    /// on Linux cannot pause a task): past it the stream ends with an error, never a memory that
    /// grows with what the server sends.
    var ceiling: Int { max(4 * capacity, 4 << 20) }
    let idleTimeout: TimeInterval
    /// The longest the stream runs after its head, whatever comes.
    let maximumDuration: TimeInterval
    private let clock: any APIClock
    private let state = Locked(State())
    /// Method and URL, for the errors the stream ends with.
    let method: String
    let url: URL?
    /// Whether each attempt goes out on a new connection (see ``TransportRequest/usesNewConnection``).
    let usesNewConnection: Bool

    init(capacity: Int, idleTimeout: TimeInterval, maximumDuration: TimeInterval = .infinity, clock: any APIClock, method: String, url: URL?,
         usesNewConnection: Bool = false) {
        self.usesNewConnection = usesNewConnection
        self.capacity = max(1, capacity)
        self.idleTimeout = idleTimeout
        self.maximumDuration = maximumDuration
        self.clock = clock
        self.method = method
        self.url = url
    }

    // MARK: The transfer's side

    /// Gives the buffer the task of `attempt`, which it pauses, resumes and cancels once the
    /// stream is open, unless a later attempt has been sent: the pipeline attaches each task once
    /// `send` returns, and the next attempt (a redirect, a retry) may have gone out meanwhile.
    func attach(_ task: any TransportTask, sentAs attempt: Int) {
        let (cancel, resume) = state.withLock { state -> (Bool, Bool) in
            guard attempt == state.attempt else { return (false, false) }
            defer { state.owesResume = false }
            // A stream that ended before its task came (a transport may answer whole before it
            // returns one) keeps none: it would hold the request, and this buffer, for ever.
            guard state.end == nil else { return (state.isCancelled, false) }
            state.task = task
            return (state.isCancelled, state.owesResume)
        }
        if cancel { task.cancel() } else if resume { task.resumeReceiving() }
    }

    /// An attempt goes out with `request`: until its task is attached, a resume is owed to it,
    /// not given to the last attempt's task, which has ended. Returns the attempt's number, for
    /// ``attach(_:sentAs:)``.
    func sending(_ request: URLRequest) -> Int {
        state.withLock { state in
            state.sent = request
            state.task = nil
            state.attempt += 1
            return state.attempt
        }
    }

    /// The latest attempt's request, as it went out: the one an event source's reconnection
    /// follows.
    var sentRequest: URLRequest? { state.withLock { $0.sent } }

    /// Opens the stream on a response whose body comes next, `onEnd` to hear the transfer's
    /// end; its timers start apart.
    func open(onEnd: EndReport? = nil) {
        state.withLock { $0.onEnd = onEnd }
    }

    /// Starts the idle and duration timers, once the app's code has judged the head: a plugin
    /// slower than the idle timeout is not the server falling silent (timed from the open, the
    /// stream ended while it ran, and what had come with the head was dropped).
    func startTimers() {
        state.withLock { $0.lastActivity = clock.now }
        armIdleTimer(after: idleTimeout)
        guard maximumDuration.isFinite else { return }
        let timer = clock.schedule(after: maximumDuration) { [self] in
            end(with: .timeout(.init(interval: maximumDuration, method: method, url: url)), cancellingTask: true)
        }
        let ended = state.withLock { state in
            if state.end == nil { state.durationTimer = timer }
            return state.end != nil
        }
        if ended { timer.cancel() }
    }

    /// The whole body of an answer that opened no stream, and its end. That body is in memory
    /// already, within the response's size limit: the ceiling, which bounds what a transfer that
    /// cannot pause adds, does not apply.
    func deliver(whole body: Data) {
        if !body.isEmpty { _ = offer(body, ceiling: .max) }
        finish(after: nil)
    }

    /// The next chunk of the body.
    func offer(_ chunk: Data) -> TransferDecision {
        offer(chunk, ceiling: ceiling)
    }

    private func offer(_ chunk: Data, ceiling: Int) -> TransferDecision {
        let (reader, decision, overran) = state.withLock { state -> (CheckedContinuation<Data?, any Error>?, TransferDecision, Bool) in
            guard state.end == nil else { return (nil, .stop, false) }
            state.lastActivity = clock.now
            state.received += chunk.count
            if let reader = state.reader {
                state.reader = nil
                return (reader, .proceed, false)
            }
            // The reader gets what came before, then the error.
            guard state.bytes + chunk.count <= ceiling else { return (nil, .stop, true) }
            state.chunks.append(chunk, joiningFrom: state.first)
            state.bytes += chunk.count
            guard state.bytes >= capacity else { return (nil, .proceed, false) }
            state.isPaused = true
            return (nil, .pause, false)
        }
        if overran { end(with: overrun(), cancellingTask: false) }
        reader?.resume(returning: chunk)
        return decision
    }

    /// Why a stream whose transport did not pause ended: its reader fell ``ceiling`` bytes behind.
    func overrun() -> APIError {
        .responseTooLarge(.init(limit: ceiling, receivedBytes: ceiling + 1, declaredLength: nil, method: method, url: url, statusCode: nil,
                                streamLimit: .init(part: "what the reader had not taken",
                                                   remedy: "The transport cannot pause a transfer (URLSession on Linux): read faster, "
                                                       + "raise RequestOptions(streamBufferSize:) (the most held is four times it, at "
                                                       + "least 4 MiB), or use CurlTransport")))
    }

    /// The transfer ended: completely when `error` is `nil`, else with what the transport said;
    /// `metrics`, what it measured. The opener hears why the stream ended, which may have been
    /// earlier (the reader's cancel, a timeout, both stopping the transfer).
    func finish(after failure: ExchangeFailure?, metrics: TransferMetrics? = nil) {
        var failure = failure
        failure?.receivedBytes = state.withLock { $0.received }
        let error: APIError? = switch failure?.reading(method: method, url: url, isDownload: false) {
        case nil: nil
        case .cancelled?: .cancelled
        case .failed(let error, _)?: error
        case .restartDownload?: .transportFailed(.init(underlying: URLError(.badServerResponse), method: method, url: url))  // a stream has no file
        }
        end(with: error, cancellingTask: false)
        let (ended, onEnd) = state.withLock { state in
            defer { state.onEnd = nil }
            return (state.end ?? nil, state.onEnd)
        }
        onEnd?(ended, metrics)
    }

    // MARK: The reader's side

    /// The next chunk; `nil` once the body is complete. Throws what ended the stream otherwise,
    /// and ``APIError/cancelled`` once the reader's task is cancelled, chunks waiting or not: a
    /// reader slower than the server always found one, and read on for ever.
    func next() async throws -> Data? {
        if Task.isCancelled {
            cancel()
            throw APIError.cancelled
        }
        if let taken = take() { return try taken.get() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let ready = state.withLock { state -> Result<Data?, any Error>? in
                    if let taken = take(from: &state) { return taken }
                    state.reader = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            cancel()
        }
    }

    /// The reader is gone: the transfer stops, and the chunks nobody will read are let go. The
    /// stream ends with `error` if given: what a view reading the body found wrong.
    func cancel(endingWith error: APIError? = nil) {
        end(with: error ?? .cancelled, cancellingTask: true)
        state.withLock { state in
            // Whatever had ended it, what was left unread ends as cancelled, not as complete.
            if error == nil, state.first < state.chunks.count { state.end = .some(.cancelled) }
            state.chunks = []
            state.first = 0
            state.bytes = 0
        }
    }

    /// The bytes the buffer holds on to, waiting or not: what it costs in memory.
    var retainedBytes: Int {
        state.withLock { state in state.chunks.reduce(0) { $0 + $1.count } }
    }

    // MARK: Inside

    /// A chunk, or the end, if one is there; resumes a paused transfer that has room again.
    private func take() -> Result<Data?, any Error>? {
        var resume: (any TransportTask)?
        let taken = state.withLock { state -> Result<Data?, any Error>? in
            let taken = take(from: &state)
            if taken != nil { state.lastActivity = clock.now }
            if state.isPaused, state.bytes <= capacity / 2 {
                state.isPaused = false
                if let task = state.task { resume = task } else { state.owesResume = true }
            }
            return taken
        }
        resume?.resumeReceiving()
        return taken
    }

    private func take(from state: inout State) -> Result<Data?, any Error>? {
        if state.first < state.chunks.count {
            let chunk = state.chunks[state.first]
            // Let go of at once, and the taken slots dropped once they are half the list: a
            // reader that never lets the list empty (it resumes the transfer at half capacity)
            // kept every chunk it had read.
            state.chunks[state.first] = Data()
            state.first += 1
            state.bytes -= chunk.count
            if state.first == state.chunks.count {
                state.chunks.removeAll(keepingCapacity: true)
                state.first = 0
            } else if state.first >= 16, state.first * 2 >= state.chunks.count {
                state.chunks.removeFirst(state.first)
                state.first = 0
            }
            return .success(chunk)
        }
        guard let end = state.end else { return nil }
        return end.map { .failure($0) } ?? .success(nil)
    }

    private func end(with error: APIError?, cancellingTask: Bool) {
        let (reader, task, timers) = state.withLock { state -> (CheckedContinuation<Data?, any Error>?, (any TransportTask)?, [any Cancellable]) in
            guard state.end == nil else { return (nil, nil, []) }
            state.end = .some(error)
            if cancellingTask { state.isCancelled = true }
            // The task goes too: it holds the receiver, which holds the request, which holds
            // this buffer, and with them the API's transport and its threads.
            defer { state.reader = nil; state.task = nil; state.idleTimer = nil; state.durationTimer = nil }
            return (state.reader, cancellingTask ? state.task : nil, [state.idleTimer, state.durationTimer].compactMap { $0 })
        }
        timers.forEach { $0.cancel() }
        task?.cancel()
        if let reader { reader.resume(with: error.map { .failure($0) } ?? .success(nil)) }
    }

    /// Ends the stream when for ``idleTimeout`` no chunk has come and the reader has taken none:
    /// a server fallen silent, or a stream paused that nobody reads (its connection is freed).
    private func armIdleTimer(after delay: TimeInterval) {
        guard idleTimeout.isFinite else { return }
        let timer = clock.schedule(after: delay) { [self] in
            let remaining = state.withLock { state -> TimeInterval? in
                guard state.end == nil else { return nil }
                return idleTimeout - (clock.now - state.lastActivity)
            }
            guard let remaining else { return }
            if remaining > 0 { return armIdleTimer(after: remaining) }
            end(with: .timeout(.init(interval: idleTimeout, method: method, url: url)), cancellingTask: true)
        }
        let ended = state.withLock { state in
            if state.end == nil { state.idleTimer = timer }
            return state.end != nil
        }
        if ended { timer.cancel() }
    }
}
