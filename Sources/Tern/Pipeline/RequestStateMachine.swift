import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One request's life as a value: ``RequestExecution`` hands it each event, under the request's
/// one lock, and runs the action it returns once the lock is let go.
///
/// Anything can end a request at any moment (a cancel, the timeout, a failure), so an event that
/// comes after the end, or for an attempt the request has moved past, is dropped, and what it
/// brought (a timer, a task, a file) is handed back to be stopped. An event that cannot come in
/// the state the request is in is a bug in the pipeline: it stops a debug build.
struct RequestStateMachine {
    /// Where the request is. Its payloads are numbers alone, so that looking at it copies no
    /// request or task: the attempt on the wire and the backoff's wait are kept beside it, set
    /// only while it is in the state they belong to.
    enum State {
        /// Not started.
        case created
        /// Its body is being encoded.
        case building
        /// An attempt's stages run: adapters, the delegate's signature, the pins.
        case preparing
        /// Waiting for the API's credentials to be refreshed.
        case awaitingCredentials
        /// Attempt `number` is on the wire (``Attempt``); plugins are owed its `didReceive`.
        case sending(number: Int)
        /// An attempt's answer is being looked at.
        case evaluating
        /// Waiting out a retry's backoff: its number (the wait, once scheduled, in `wait`).
        case backingOff(retry: Int)
        /// Settled; nothing more happens.
        case finished
    }

    /// The attempt on the wire, numbered from 1 across retries, refreshes and redirects.
    struct Attempt {
        /// As sent: signed, with its cookies.
        let request: URLRequest
        /// The transport's task, once it has made one.
        var task: (any TransportTask)?
    }

    /// What happens to a request.
    enum Event {
        /// The pipeline got to it; `timer` ends it when its time is up.
        case start(timer: (any Cancellable)?)
        /// Its body is encoded, into `temporaryFile` if it needed one.
        case built(URLRequest, temporaryFile: URL?)
        /// An attempt's stages begin: after building, a refresh, a backoff or a redirect.
        case prepare
        /// It waits for the API's credentials to be refreshed.
        case awaitCredentials
        /// An attempt goes on the wire.
        case send(URLRequest)
        /// The transport made `task` for `attempt`.
        case started(any TransportTask, attempt: Int)
        /// `attempt` ended: answered, or failed; `metrics` when the transport measured it, after
        /// what it measured of `earlier` exchanges made for the attempt (the cache's).
        case answered(attempt: Int, metrics: TransferMetrics?, earlier: [TransferMetrics] = [])
        /// `attempt`'s head opened the request's stream, which owns the attempt's task from then
        /// on, and its body goes on after the request has settled.
        case opened(attempt: Int)
        /// The answer was a refusal of the credentials; `replaced` when newer ones were made
        /// current after the attempt was signed (another request's refresh).
        case refused(replaced: Bool)
        /// The attempt is to be retried after a backoff.
        case backOff
        /// The wait of the backoff before `retry` is scheduled.
        case waiting(any Cancellable, retry: Int)
        /// It ends: settled, cancelled, timed out.
        case finish
    }

    /// What to run for an event.
    enum Action {
        /// Go on with the step the event announced.
        case proceed
        /// Nothing: the request has ended, or moved past what the event concerns.
        case drop
        /// Stop what came too late: a timer, a wait.
        case cancel(any Cancellable)
        /// Stop a task whose attempt is over.
        case cancelTask(any TransportTask)
        /// Delete a body file nobody will send.
        case deleteFile(URL)
        /// Send the attempt numbered so.
        case send(attempt: Int)
        /// Look at the attempt's answer; `retries` so far, and what every exchange measured.
        case evaluate(retries: Int, transfers: [TransferMetrics])
        /// Wait for the API's credentials to be refreshed, then attempt again.
        case refresh
        /// The current credentials were refused again right after a refresh: fail.
        case failUnauthorized
        /// Schedule retry number `retry` after its backoff.
        case scheduleRetry(Int)
        /// Settle the promise, and stop what is left.
        case settle(Leftovers)
    }

    /// What is left to stop once the request has ended.
    struct Leftovers {
        var timer: (any Cancellable)?
        var wait: (any Cancellable)?
        var task: (any TransportTask)?
        var temporaryFile: URL?
        /// The attempt that was on the wire, whose `didReceive` plugins are owed.
        var attemptInFlight: URLRequest?
    }

    private(set) var state = State.created
    /// The attempt on the wire, while ``State/sending(number:)``.
    private var inFlight: Attempt?
    /// The backoff's wait once scheduled, while ``State/backingOff(retry:)``.
    private var wait: (any Cancellable)?
    /// How many retries the request has had.
    private var retries = 0
    /// Whether the latest attempt was sent again after a refresh, with no other answer between:
    /// refused again with the credentials still current, it fails rather than loop.
    private var isReplay = false
    /// The request as built, for a timeout's error before any attempt.
    private var built: URLRequest?
    private var attempts = 0
    private var timer: (any Cancellable)?
    private var temporaryFile: URL?
    /// What the transport measured of each exchange so far: retries and redirects, in order.
    private var transfers: [TransferMetrics] = []
    /// The attempt whose head opened the stream: its task is the stream's to stop.
    private var streamAttempt: Int?
    /// The latest attempt's exchange: what its transfer has brought.
    private var exchange = ExchangeState(attempt: 0)

    /// Takes `event` and returns what to run. Switches on the event alone, and looks at the
    /// state in place: a switch over the pair copied both, for every event of every request.
    mutating func handle(_ event: Event) -> Action {
        if case .finished = state { return afterTheEnd(event) }
        switch event {
        case .start(let timer):
            guard case .created = state else { return impossible(event) }
            self.timer = timer
            state = .building
            return .proceed
        case .built(let request, let file):
            guard case .building = state else { return impossible(event) }
            built = request
            temporaryFile = file
            state = .preparing
            return .proceed
        case .prepare:
            switch state {
            case .preparing, .awaitingCredentials, .backingOff, .evaluating:
                state = .preparing
                wait = nil
                return .proceed
            default:
                return impossible(event)
            }
        case .awaitCredentials:
            guard case .preparing = state else { return impossible(event) }
            state = .awaitingCredentials
            return .proceed
        case .send(let request):
            guard case .preparing = state else { return impossible(event) }
            attempts += 1
            state = .sending(number: attempts)
            inFlight = Attempt(request: request)
            exchange = ExchangeState(attempt: attempts)
            return .send(attempt: attempts)
        case .started(let task, let number):
            // The head came before the transport's task was handed over: the stream holds it.
            if number == streamAttempt { return .drop }
            guard case .sending(number) = state, inFlight?.task == nil else {
                // Its attempt was answered first, or is over: the task has nothing left to do.
                return .cancelTask(task)
            }
            inFlight?.task = task
            return .proceed
        case .answered(let number, let metrics, let earlier):
            if !earlier.isEmpty { transfers += earlier }
            if let metrics { transfers.append(metrics) }
            // Else a late answer, to an attempt the request has moved past.
            guard case .sending(number) = state else { return .drop }
            state = .evaluating
            inFlight = nil
            return .evaluate(retries: retries, transfers: transfers)
        case .opened(let number):
            guard case .sending(number) = state else { return .drop }
            streamAttempt = number
            state = .evaluating
            inFlight = nil
            return .evaluate(retries: retries, transfers: transfers)
        case .refused(let replaced):
            guard case .evaluating = state else { return impossible(event) }
            // Refused with credentials replaced meanwhile: sent again with the current ones,
            // which cannot loop, since only a refresh (counted by `RefreshLimit`) makes newer.
            guard !isReplay || replaced else { return .failUnauthorized }
            isReplay = true
            state = .awaitingCredentials
            return .refresh
        case .backOff:
            guard case .evaluating = state else { return impossible(event) }
            // Another answer came after the replay: the retry's refusal is one of its own.
            isReplay = false
            retries += 1
            state = .backingOff(retry: retries)
            return .scheduleRetry(retries)
        case .waiting(let wait, let retry):
            // Else it fired before it was recorded: its attempt is under way, or even backing
            // off before a later retry, whose own wait this must not take the place of.
            guard case .backingOff(retry) = state, self.wait == nil else { return .cancel(wait) }
            self.wait = wait
            return .proceed
        case .finish:
            return .settle(finish())
        }
    }

    /// What comes after the request ended changes nothing: what it brought is stopped.
    private mutating func afterTheEnd(_ event: Event) -> Action {
        switch event {
        case .start(let timer):
            return timer.map(Action.cancel) ?? .drop
        case .built(_, let file):
            return file.map(Action.deleteFile) ?? .drop
        case .started(let task, let number):
            // The stream's task, handed over after its head ended the request: the stream holds it.
            return number == streamAttempt ? .drop : .cancelTask(task)
        case .waiting(let wait, _):
            return .cancel(wait)
        case .answered(_, let metrics, let earlier):
            transfers += earlier
            if let metrics { transfers.append(metrics) }
            return .drop
        default:
            return .drop
        }
    }

    /// Runs `body` on `attempt`'s exchange; `nil` when the request has moved past it (a later
    /// attempt is on the wire), so that a transport's late events change nothing.
    mutating func collecting<Result>(_ attempt: Int, _ body: (inout ExchangeState) -> Result) -> Result? {
        guard exchange.attempt == attempt else { return nil }
        return body(&exchange)
    }

    /// Keeps what an earlier exchange of `attempt` measured (the cache's, before it asks again):
    /// whether the request still waits for the attempt's answer.
    mutating func earlierExchangeEnded(_ attempt: Int, metrics: TransferMetrics?) -> Bool {
        guard case .sending(attempt) = state, exchange.attempt == attempt else { return false }
        if let metrics { exchange.earlier.append(metrics) }
        return true
    }

    /// Whether attempt `number`, on the wire, has gone its idle timeout with no byte moving
    /// (see ``ExchangeState/lookForProgress(waitingForConnection:timeout:)``); `.over` once the
    /// request has moved past it.
    mutating func lookForProgress(_ number: Int, waitingForConnection: Bool, timeout: TimeInterval) -> IdleWatch.Look {
        guard case .sending(number) = state, exchange.attempt == number else { return .over }
        return exchange.lookForProgress(waitingForConnection: waitingForConnection, timeout: timeout)
    }

    /// Whether attempt `number`, whose send the machine took, still goes on the wire: plugins
    /// hear it announced before the transport is asked, and the request may end meanwhile (a
    /// plugin's cancel, another thread's, the timeout), or have moved past it.
    func stillSends(_ number: Int) -> Bool {
        guard case .sending(number) = state else { return false }
        return true
    }

    /// Ends the request: what is left to stop.
    private mutating func finish() -> Leftovers {
        let leftovers = Leftovers(timer: timer, wait: wait, task: inFlight?.task, temporaryFile: temporaryFile,
                                  attemptInFlight: inFlight?.request)
        state = .finished
        timer = nil
        wait = nil
        inFlight = nil
        temporaryFile = nil
        return leftovers
    }

    /// An event the pipeline cannot send in this state: a bug, which stops a debug build; a
    /// release build drops it.
    private func impossible(_ event: Event) -> Action {
        assertionFailure("a request \(state.name) cannot take the event \(event)")
        return .drop
    }

    /// Whether the request has ended.
    var isFinished: Bool {
        if case .finished = state { true } else { false }
    }

    /// Whether the request waits for the delegate's refresh of its credentials.
    var isAwaitingCredentials: Bool {
        if case .awaitingCredentials = state { true } else { false }
    }

    /// The transport's task for the attempt on the wire, if any.
    var task: (any TransportTask)? {
        inFlight?.task
    }

    /// The request the timeout names: the attempt on the wire, else the one built.
    var latestRequest: URLRequest? {
        inFlight?.request ?? built
    }
}

extension RequestStateMachine.State {
    /// For the message of an impossible event.
    var name: String {
        switch self {
        case .created: "not started"
        case .building: "building its body"
        case .preparing: "preparing an attempt"
        case .awaitingCredentials: "waiting for credentials"
        case .sending(let number): "sending attempt \(number)"
        case .evaluating: "evaluating an answer"
        case .backingOff(let retry): "backing off before retry \(retry)"
        case .finished: "finished"
        }
    }
}
