import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

/// The request's state machine on its own, without I/O: what each event does in each state, and
/// what an ended request hands back to stop.
@Suite(.onTestThreads) struct RequestStateMachineTests {
    typealias Machine = RequestStateMachine

    final class Token: Cancellable, TransportTask {
        func cancel() {}
    }

    let request = URLRequest(url: URL(string: "https://example.com/a")!)

    /// The machine after `events`, each of which must have gone on.
    func machine(after events: [Machine.Event]) -> Machine {
        var machine = Machine()
        for event in events { _ = machine.handle(event) }
        return machine
    }

    /// A request built and ready for its first attempt.
    var prepared: [Machine.Event] { [.start(timer: nil), .built(request, temporaryFile: nil), .prepare] }

    @Test func aRequestGoesThroughItsStatesAndSettlesOnce() throws {
        var machine = Machine()
        let timer = Token()
        let file = URL(fileURLWithPath: "/tmp/body")
        #expect(machine.handle(.start(timer: timer)).isProceed)
        #expect(machine.handle(.built(request, temporaryFile: file)).isProceed)
        #expect(machine.handle(.prepare).isProceed)
        guard case .send(let attempt) = machine.handle(.send(request)) else { Issue.record("not sent"); return }
        #expect(attempt == 1 && machine.latestRequest == request)
        #expect(machine.handle(.started(Token(), attempt: attempt)).isProceed)
        let metrics = TransferMetrics()
        guard case .evaluate(let retries, let transfers) = machine.handle(.answered(attempt: attempt, metrics: metrics)) else {
            Issue.record("the answer was not evaluated"); return
        }
        #expect(retries == 0 && transfers.count == 1)

        guard case .settle(let leftovers) = machine.handle(.finish) else { Issue.record("not settled"); return }
        #expect(leftovers.timer as? Token === timer)
        #expect(leftovers.task == nil, "the answered attempt's task is done")
        #expect(leftovers.temporaryFile == file)
        #expect(leftovers.attemptInFlight == nil)
        #expect(machine.handle(.finish).isDrop, "a request settles once")
    }

    @Test func endingMidAttemptHandsOverTheTaskAndTheAttemptPluginsAreOwed() throws {
        var machine = machine(after: prepared)
        _ = machine.handle(.send(request))
        let task = Token()
        _ = machine.handle(.started(task, attempt: 1))
        guard case .settle(let leftovers) = machine.handle(.finish) else { Issue.record("not settled"); return }
        #expect(leftovers.task as? Token === task)
        #expect(leftovers.attemptInFlight == request)
    }

    @Test func whatComesAfterTheEndIsHandedBackToBeStopped() {
        var machine = Machine()
        _ = machine.handle(.finish)
        let timer = Token(), task = Token(), wait = Token()
        let file = URL(fileURLWithPath: "/tmp/body")
        guard case .cancel(let lateTimer) = machine.handle(.start(timer: timer)),
              case .deleteFile(let lateFile) = machine.handle(.built(request, temporaryFile: file)),
              case .cancelTask(let lateTask) = machine.handle(.started(task, attempt: 1)),
              case .cancel(let lateWait) = machine.handle(.waiting(wait, retry: 1)) else {
            Issue.record("something that came late was not handed back"); return
        }
        #expect(lateTimer as? Token === timer && lateFile == file && lateTask as? Token === task && lateWait as? Token === wait)
        let dropped: [Machine.Event] = [.prepare, .awaitCredentials, .send(request), .answered(attempt: 1, metrics: nil), .refused(replaced: false), .backOff, .finish]
        for event in dropped {
            #expect(machine.handle(event).isDrop, "\(event) after the end")
        }
        #expect(machine.isFinished)
    }

    @Test func aLateAnswerOrTaskOfAnEarlierAttemptIsRefused() throws {
        var machine = machine(after: prepared)
        _ = machine.handle(.send(request))
        _ = machine.handle(.answered(attempt: 1, metrics: nil))
        guard case .scheduleRetry(1) = machine.handle(.backOff) else { Issue.record("no retry"); return }
        _ = machine.handle(.prepare)
        guard case .send(2) = machine.handle(.send(request)) else { Issue.record("the retry was not attempt 2"); return }
        // The first attempt's task, registered late, must not stand for the second's.
        let lateTask = Token()
        guard case .cancelTask(let cancelled) = machine.handle(.started(lateTask, attempt: 1)) else { Issue.record("late task kept"); return }
        #expect(cancelled as? Token === lateTask)
        #expect(machine.handle(.answered(attempt: 1, metrics: TransferMetrics())).isDrop)
        #expect(machine.handle(.started(Token(), attempt: 2)).isProceed)
        guard case .evaluate(let retries, let transfers) = machine.handle(.answered(attempt: 2, metrics: TransferMetrics())) else {
            Issue.record("the second answer was not evaluated"); return
        }
        #expect(retries == 1)
        #expect(transfers.count == 2, "what every exchange measured, the late one's too")
    }

    /// What the transport brings is the latest attempt's alone: once a retry is on the wire, the
    /// first attempt's late chunks and end find nothing to change (the collector stops them), and
    /// an ended exchange hands over what it had and keeps nothing, after the request settled too.
    @Test func onlyTheLatestAttemptsExchangeCollects() {
        var machine = machine(after: prepared)
        #expect(machine.collecting(1) { _ in true } == nil, "nothing collects before an attempt is sent")
        _ = machine.handle(.send(request))
        machine.collecting(1) { $0.body.append(Data("first".utf8)) }
        _ = machine.handle(.answered(attempt: 1, metrics: nil))
        _ = machine.handle(.backOff)
        _ = machine.handle(.prepare)
        _ = machine.handle(.send(request))
        #expect(machine.collecting(1) { _ in true } == nil, "the first attempt's late events change nothing")
        #expect(machine.collecting(2) { $0.body.isEmpty && !$0.hasHead } == true, "the retry collects afresh")
        machine.collecting(2) { $0.body.append(Data("second".utf8)) }
        let ended = machine.collecting(2) { $0.end() }
        #expect(ended?.body == Data("second".utf8))
        _ = machine.handle(.finish)
        #expect(machine.collecting(2) { $0.hasEnded && $0.body.isEmpty && $0.task == nil } == true, "ended, it keeps nothing")
    }

    /// The cache's exchange before it asks again (a `304` for another response): its metrics
    /// join the attempt's while the request waits for the answer; once the request has ended,
    /// even before the transport's task was handed over, or moved past the attempt, nothing
    /// more is to be sent.
    @Test func anEarlierExchangeGoesOnOnlyWhileItsAttemptIsAwaited() {
        var answered = machine(after: prepared)
        let beforeSending = answered.earlierExchangeEnded(1, metrics: nil)
        _ = answered.handle(.send(request))
        let whileSending = answered.earlierExchangeEnded(1, metrics: TransferMetrics())
        let ofAnotherAttempt = answered.earlierExchangeEnded(2, metrics: nil)
        #expect(!beforeSending && whileSending && !ofAnotherAttempt)
        let earlier = answered.collecting(1) { $0.end().earlier } ?? []
        guard case .evaluate(_, let transfers) = answered.handle(.answered(attempt: 1, metrics: TransferMetrics(), earlier: earlier)) else {
            Issue.record("the answer was not evaluated"); return
        }
        #expect(transfers.count == 2, "the earlier exchange's metrics, then the answer's")
        let afterTheAnswer = answered.earlierExchangeEnded(1, metrics: nil)
        #expect(!afterTheAnswer)

        var cancelled = machine(after: prepared)
        _ = cancelled.handle(.send(request))
        _ = cancelled.handle(.finish)
        let afterTheEnd = cancelled.earlierExchangeEnded(1, metrics: nil)
        #expect(!afterTheEnd, "ended before its task was handed over")
    }

    /// An attempt whose send the machine took still goes on the wire only while the request
    /// waits for it: not once it has ended (plugins heard it announced, and one cancelled), nor
    /// for an attempt it has moved past.
    @Test func anAttemptGoesOnTheWireOnlyWhileItIsAwaited() {
        var sending = machine(after: prepared)
        let beforeSending = sending.stillSends(1)
        _ = sending.handle(.send(request))
        #expect(!beforeSending && sending.stillSends(1) && !sending.stillSends(2))
        _ = sending.handle(.answered(attempt: 1, metrics: nil))
        #expect(!sending.stillSends(1), "answered")

        var cancelled = machine(after: prepared)
        _ = cancelled.handle(.send(request))
        guard case .settle(let leftovers) = cancelled.handle(.finish) else {
            Issue.record("the end did not settle"); return
        }
        #expect(leftovers.attemptInFlight != nil && leftovers.task == nil, "plugins are told of the attempt; no task to stop")
        #expect(!cancelled.stillSends(1), "ended before the transport was asked")
    }

    @Test func aTaskForAnAttemptAnsweredFirstIsStopped() {
        var machine = machine(after: prepared)
        _ = machine.handle(.send(request))
        _ = machine.handle(.answered(attempt: 1, metrics: nil))
        guard case .cancelTask = machine.handle(.started(Token(), attempt: 1)) else { Issue.record("kept"); return }
    }

    /// A stub or a replay can send a stream's head before `send` has the transport's task: the
    /// task then belongs to the stream the head opened, before the request settles and after.
    /// (Stopped as an answered attempt's, the stream ended "cancelled" now and then in CI.)
    @Test func aTaskForAnAttemptWhoseHeadOpenedTheStreamIsTheStreams() {
        var machine = machine(after: prepared)
        _ = machine.handle(.send(request))
        guard case .evaluate = machine.handle(.opened(attempt: 1)) else { Issue.record("the head was not taken"); return }
        #expect(machine.handle(.started(Token(), attempt: 1)).isDrop, "stopped while the stream is judged")
        _ = machine.handle(.finish)
        #expect(machine.handle(.started(Token(), attempt: 1)).isDrop, "stopped once the request settled with the stream")
        guard case .cancelTask = machine.handle(.started(Token(), attempt: 2)) else { Issue.record("another attempt's task kept"); return }

        // A head that comes after the request ended opens nothing.
        var ended = self.machine(after: prepared)
        _ = ended.handle(.send(request))
        _ = ended.handle(.finish)
        #expect(ended.handle(.opened(attempt: 1)).isDrop)
        guard case .cancelTask = ended.handle(.started(Token(), attempt: 1)) else { Issue.record("an unopened attempt's task kept"); return }
    }

    @Test func aWaitIsKeptOnlyWhileBackingOff() throws {
        var machine = machine(after: prepared)
        _ = machine.handle(.send(request))
        _ = machine.handle(.answered(attempt: 1, metrics: nil))
        _ = machine.handle(.backOff)
        let wait = Token()
        #expect(machine.handle(.waiting(wait, retry: 1)).isProceed)
        guard case .settle(let leftovers) = machine.handle(.finish) else { Issue.record("not settled"); return }
        #expect(leftovers.wait as? Token === wait, "a request ended while backing off stops its wait")

        // The wait fired before it was recorded: the next attempt is already on the wire.
        var fired = self.machine(after: prepared)
        _ = fired.handle(.send(request))
        _ = fired.handle(.answered(attempt: 1, metrics: nil))
        _ = fired.handle(.backOff)
        _ = fired.handle(.prepare)
        _ = fired.handle(.send(request))
        guard case .cancel = fired.handle(.waiting(Token(), retry: 1)) else { Issue.record("a fired wait was kept"); return }

        // It fired and was recorded so late that its attempt was answered and is backing off
        // before the next retry: it is not kept for that one, whose own wait comes next.
        _ = fired.handle(.answered(attempt: 2, metrics: nil))
        _ = fired.handle(.backOff)
        let late = Token(), own = Token()
        guard case .cancel(let cancelled) = fired.handle(.waiting(late, retry: 1)) else { Issue.record("a late wait was kept"); return }
        #expect(cancelled as? Token === late)
        #expect(fired.handle(.waiting(own, retry: 2)).isProceed)
        guard case .settle(let leftovers) = fired.handle(.finish) else { Issue.record("not settled"); return }
        #expect(leftovers.wait as? Token === own, "the second retry's own wait is the one kept")
    }

    @Test func aRefusedRequestIsReplayedAfterARefreshOnlyOnce() {
        var machine = machine(after: prepared)
        _ = machine.handle(.send(request))
        _ = machine.handle(.answered(attempt: 1, metrics: nil))
        guard case .refresh = machine.handle(.refused(replaced: false)) else { Issue.record("no refresh"); return }
        #expect(machine.handle(.prepare).isProceed, "the refresh done, it attempts again")
        _ = machine.handle(.send(request))
        _ = machine.handle(.answered(attempt: 2, metrics: nil))
        guard case .failUnauthorized = machine.handle(.refused(replaced: false)) else { Issue.record("refreshed twice"); return }
    }

    /// The replay refused with credentials another refresh replaced since, or a retry after
    /// the replay was answered, is not "refused again right after the refresh".
    @Test(arguments: [true, false]) func aReplayIsFinalOnlyWhileItsCredentialsAreCurrentAndNothingCameBetween(retried: Bool) {
        var machine = machine(after: prepared)
        _ = machine.handle(.send(request))
        _ = machine.handle(.answered(attempt: 1, metrics: nil))
        guard case .refresh = machine.handle(.refused(replaced: false)) else { Issue.record("no refresh"); return }
        _ = machine.handle(.prepare)
        _ = machine.handle(.send(request))
        _ = machine.handle(.answered(attempt: 2, metrics: nil))
        if retried {
            guard case .scheduleRetry(1) = machine.handle(.backOff) else { Issue.record("no retry"); return }
            _ = machine.handle(.prepare)
            _ = machine.handle(.send(request))
            _ = machine.handle(.answered(attempt: 3, metrics: nil))
        }
        guard case .refresh = machine.handle(.refused(replaced: !retried)) else { Issue.record("not replayed"); return }
        _ = machine.handle(.prepare)
        _ = machine.handle(.send(request))
        _ = machine.handle(.answered(attempt: retried ? 4 : 3, metrics: nil))
        guard case .failUnauthorized = machine.handle(.refused(replaced: false)) else { Issue.record("loops"); return }
    }

    @Test func aRequestWaitsForCredentialsBeforeItsAttempt() {
        var machine = machine(after: prepared)
        #expect(machine.handle(.awaitCredentials).isProceed)
        #expect(machine.handle(.prepare).isProceed)
        guard case .send(1) = machine.handle(.send(request)) else { Issue.record("not sent"); return }
    }

    @Test func theTimeoutNamesTheAttemptOnTheWireElseTheRequestBuilt() throws {
        var machine = Machine()
        #expect(machine.latestRequest == nil)
        _ = machine.handle(.start(timer: nil))
        _ = machine.handle(.built(request, temporaryFile: nil))
        #expect(machine.latestRequest == request)
        var signed = request
        signed.setValue("Bearer x", forHTTPHeaderField: "Authorization")
        _ = machine.handle(.prepare)
        _ = machine.handle(.send(signed))
        #expect(machine.latestRequest == signed)
        _ = machine.handle(.answered(attempt: 1, metrics: nil))
        #expect(machine.latestRequest == request)
    }

    #if DEBUG
    /// A bug in the pipeline (here: sending before the request is built) stops a debug build,
    /// rather than going on in a state nobody planned for.
    @Test(.exitTest) func anImpossibleEventStopsADebugBuild() async {
        await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .failure) {
                var machine = RequestStateMachine()
                _ = machine.handle(.send(URLRequest(url: URL(string: "https://example.com/a")!)))
            }
        }
    }
    #endif
}

extension RequestStateMachine.Action {
    var isProceed: Bool {
        if case .proceed = self { true } else { false }
    }

    var isDrop: Bool {
        if case .drop = self { true } else { false }
    }
}
