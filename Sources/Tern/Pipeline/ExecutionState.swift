import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One request's progress through the pipeline, as a plain value: ``RequestExecution`` keeps it
/// behind its lock, asks it at each step whether the step may happen, and does the work (and
/// any cleanup it is handed) outside the lock.
///
/// Anything can end a request at any moment (a cancel, the timeout, a failure), so every step
/// checks that the request has not finished, and ``finish()`` hands over, once, everything
/// that is left to stop.
struct ExecutionState {
    /// Where the request is.
    enum Phase: Equatable {
        /// Not started.
        case created
        /// Its body is being encoded.
        case building
        /// Waiting for the credentials to be refreshed.
        case awaitingCredentials
        /// An attempt is on the wire, numbered from 1; plugins are owed its `didReceive`.
        case sending(URLRequest, attempt: Int)
        /// An attempt's answer is being looked at.
        case evaluating
        /// Waiting out a retry's backoff.
        case backingOff
        /// Settled; nothing more happens.
        case finished
    }

    /// What is left to stop once the request has finished.
    struct Leftovers {
        var timer: (any Cancellable)?
        var wait: (any Cancellable)?
        var task: (any TransportTask)?
        var temporaryFile: URL?
        /// The attempt that was on the wire, whose `didReceive` plugins are owed.
        var attemptInFlight: URLRequest?
    }

    private(set) var phase = Phase.created
    /// How many retries the request has had.
    private(set) var retries = 0
    /// Whether it was sent again after a refresh: a second refusal is final.
    private(set) var hasReplayedAfterRefresh = false
    /// The request as built, for a timeout's error before any attempt.
    private(set) var built: URLRequest?
    private var attempts = 0
    private var leftovers = Leftovers()

    var isFinished: Bool { phase == .finished }

    /// The transport's task for the attempt on the wire, if any.
    var task: (any TransportTask)? { leftovers.task }

    /// The request the timeout names: the attempt on the wire, else the one built.
    var latestRequest: URLRequest? {
        if case .sending(let request, _) = phase { request } else { built }
    }

    /// Starts building, with the overall timer; `false` when the request has already finished
    /// (the caller then cancels the timer).
    mutating func begin(timer: (any Cancellable)?) -> Bool {
        guard phase == .created else { return false }
        phase = .building
        leftovers.timer = timer
        return true
    }

    /// The request is built; `false` when it finished meanwhile (the caller then deletes the file).
    mutating func built(_ request: URLRequest, temporaryFile: URL?) -> Bool {
        guard !isFinished else { return false }
        built = request
        leftovers.temporaryFile = temporaryFile
        return true
    }

    /// Waits for credentials; `false` when the request has finished.
    mutating func awaitCredentials() -> Bool {
        guard !isFinished else { return false }
        phase = .awaitingCredentials
        return true
    }

    /// Puts `request` on the wire: returns the attempt's number, or `nil` when the request has
    /// finished.
    mutating func send(_ request: URLRequest) -> Int? {
        guard !isFinished else { return nil }
        attempts += 1
        phase = .sending(request, attempt: attempts)
        return attempts
    }

    /// The transport's task for `attempt`; `false` when that attempt is no longer on the wire
    /// (the request finished, or the answer came first), and the caller cancels the task.
    mutating func started(_ task: any TransportTask, attempt: Int) -> Bool {
        guard case .sending(_, attempt) = phase else { return false }
        leftovers.task = task
        return true
    }

    /// `attempt` has its answer: returns the retries so far, or `nil` for an answer that is not
    /// the one awaited (the request finished), to be dropped.
    mutating func receive(attempt: Int) -> Int? {
        guard case .sending(_, attempt) = phase else { return nil }
        phase = .evaluating
        leftovers.task = nil
        return retries
    }

    /// Whether the request may be sent again after a refresh: once.
    mutating func replayAfterRefresh() -> Bool {
        defer { hasReplayedAfterRefresh = true }
        return !hasReplayedAfterRefresh && !isFinished
    }

    /// Starts a retry's backoff: returns the retry's number, or `nil` when the request has finished.
    mutating func backOff() -> Int? {
        guard !isFinished else { return nil }
        phase = .backingOff
        retries += 1
        return retries
    }

    /// The backoff's wait; `false` when the request finished meanwhile (the caller then cancels it).
    mutating func waiting(_ wait: any Cancellable) -> Bool {
        guard phase == .backingOff else { return false }
        leftovers.wait = wait
        return true
    }

    /// Finishes the request: returns what is left to stop, the first time only.
    mutating func finish() -> Leftovers? {
        guard !isFinished else { return nil }
        var leftovers = leftovers
        if case .sending(let request, _) = phase { leftovers.attemptInFlight = request }
        phase = .finished
        self.leftovers = Leftovers()
        return leftovers
    }
}
