import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

/// The request's state machine on its own, without I/O: which steps may happen in which phase,
/// and what a finished request hands over to stop. (Steps are taken outside `#expect`, which
/// cannot run mutating calls.)
@Suite(.onTestThreads) struct ExecutionStateTests {
    final class Token: Cancellable, TransportTask {
        func cancel() {}
    }

    let request = URLRequest(url: URL(string: "https://example.com/a")!)

    @Test func aRequestGoesThroughItsPhasesAndFinishesOnce() throws {
        var state = ExecutionState()
        let timer = Token()
        let began = state.begin(timer: timer)
        #expect(began && state.phase == .building)
        let built = state.built(request, temporaryFile: URL(fileURLWithPath: "/tmp/body"))
        #expect(built)
        let attempt = try #require(state.send(request) as Int?)
        #expect(state.phase == .sending(request, attempt: attempt))
        let started = state.started(Token(), attempt: attempt)
        let retries = state.receive(attempt: attempt)
        #expect(started && retries == 0 && state.phase == .evaluating)

        let leftovers = try #require(state.finish() as ExecutionState.Leftovers?)
        #expect(leftovers.timer as? Token === timer)
        #expect(leftovers.task == nil, "the answered attempt's task is done")
        #expect(leftovers.temporaryFile?.path == "/tmp/body")
        #expect(leftovers.attemptInFlight == nil)
        let again = state.finish()
        #expect(again == nil, "a request finishes once")
    }

    @Test func finishingMidAttemptHandsOverTheTaskAndTheAttemptPluginsAreOwed() throws {
        var state = ExecutionState()
        _ = state.begin(timer: nil)
        let attempt = try #require(state.send(request) as Int?)
        let task = Token()
        _ = state.started(task, attempt: attempt)
        let leftovers = try #require(state.finish() as ExecutionState.Leftovers?)
        #expect(leftovers.task as? Token === task)
        #expect(leftovers.attemptInFlight == request)
    }

    @Test func nothingHappensOnceFinished() {
        var state = ExecutionState()
        _ = state.finish()
        let steps = [
            state.begin(timer: Token()),  // the caller cancels the timer
            state.built(request, temporaryFile: nil),  // the caller deletes the file
            state.awaitCredentials(),
            state.send(request) != nil,
            state.backOff() != nil,
            state.replayAfterRefresh(),
        ]
        #expect(steps == [false, false, false, false, false, false])
        #expect(state.isFinished)
    }

    @Test func aLateAnswerOrTaskOfAnEarlierAttemptIsRefused() throws {
        var state = ExecutionState()
        _ = state.begin(timer: nil)
        let first = try #require(state.send(request) as Int?)
        _ = state.receive(attempt: first)
        let retry = state.backOff()
        #expect(retry == 1)
        let second = try #require(state.send(request) as Int?)
        #expect(second != first)
        // The first attempt's task, registered late, must not stand for the second's.
        let lateTask = state.started(Token(), attempt: first)
        let lateAnswer = state.receive(attempt: first)
        #expect(!lateTask && lateAnswer == nil)
        let task = state.started(Token(), attempt: second)
        let answer = state.receive(attempt: second)
        #expect(task && answer == 1)
    }

    @Test func aWaitIsKeptOnlyWhileBackingOff() throws {
        var state = ExecutionState()
        _ = state.begin(timer: nil)
        let attempt = try #require(state.send(request) as Int?)
        _ = state.receive(attempt: attempt)
        _ = state.backOff()
        let kept = state.waiting(Token())
        // The wait fired before it was recorded: the next attempt is already on the wire.
        _ = state.send(request)
        let keptLate = state.waiting(Token())
        #expect(kept && !keptLate, "the caller cancels a wait that has fired")
    }

    @Test func aRequestIsReplayedAfterARefreshOnlyOnce() {
        var state = ExecutionState()
        _ = state.begin(timer: nil)
        let first = state.replayAfterRefresh()
        let second = state.replayAfterRefresh()
        #expect(first && !second)
    }

    @Test func theTimeoutNamesTheAttemptOnTheWireElseTheRequestBuilt() throws {
        var state = ExecutionState()
        #expect(state.latestRequest == nil)
        _ = state.begin(timer: nil)
        _ = state.built(request, temporaryFile: nil)
        #expect(state.latestRequest == request)
        var signed = request
        signed.setValue("Bearer x", forHTTPHeaderField: "Authorization")
        let attempt = try #require(state.send(signed) as Int?)
        #expect(state.latestRequest == signed)
        _ = state.receive(attempt: attempt)
        #expect(state.latestRequest == request)
    }
}
