import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

/// The single-flight refresh rules on their own.
@Suite(.onTestThreads) struct RefreshStateTests {
    let limit = RefreshLimit(count: 2, window: 30)

    @Test func theFirstRefusalStartsARefreshAndTheOthersJoinIt() {
        var state = RefreshState()
        let first = state.decide(signedWith: 0, now: 0, limit: limit)
        let second = state.decide(signedWith: 0, now: 0, limit: limit)
        guard case .start(let started, _) = first, case .join(let joined) = second else {
            Issue.record("expected start then join, got \(first) and \(second)")
            return
        }
        #expect(started === joined)
        #expect(state.inFlight === started)
    }

    @Test func aRequestSignedWithOlderCredentialsIsReplayedWithoutARefresh() {
        var state = RefreshState()
        _ = state.decide(signedWith: 0, now: 0, limit: limit)
        state.finish(succeeded: true, counts: true, at: 0)
        #expect(state.generation == 1)
        guard case .replay = state.decide(signedWith: 0, now: 1, limit: limit) else {
            Issue.record("expected replay")
            return
        }
    }

    @Test func aFailedRefreshLetsTheNextRequestTryAgain() {
        var state = RefreshState()
        _ = state.decide(signedWith: 0, now: 0, limit: limit)
        state.finish(succeeded: false, counts: true, at: 0)
        #expect(state.generation == 0 && state.inFlight == nil)
        guard case .start = state.decide(signedWith: 0, now: 1, limit: limit) else {
            Issue.record("expected a new refresh")
            return
        }
    }

    @Test func theLimitCountsOnlyRefreshesThatReachedTheServerWithinTheWindow() {
        var state = RefreshState()
        for _ in 0..<5 {  // network failures: never counted
            _ = state.decide(signedWith: state.generation, now: 0, limit: limit)
            state.finish(succeeded: false, counts: false, at: 0)
        }
        for _ in 0..<2 {
            _ = state.decide(signedWith: state.generation, now: 1, limit: limit)
            state.finish(succeeded: true, counts: true, at: 1)
        }
        guard case .refuse = state.decide(signedWith: state.generation, now: 10, limit: limit) else {
            Issue.record("expected the limit to refuse")
            return
        }
        guard case .start = state.decide(signedWith: state.generation, now: 31, limit: limit) else {
            Issue.record("expected the window to have passed")
            return
        }
    }

    /// APIs that share a delegate may each have a limit: one with a short window must not make
    /// the state forget refreshes that a longer window still counts.
    @Test func aShortWindowForgetsNothingALongerOneCounts() {
        var state = RefreshState()
        let strict = RefreshLimit(count: 2, window: 300)
        let lax = RefreshLimit(count: 10, window: 1)
        for now in [0.0, 1] {
            _ = state.decide(signedWith: state.generation, now: now, limit: strict)
            state.finish(succeeded: true, counts: true, at: now)
        }
        guard case .start = state.decide(signedWith: state.generation, now: 10, limit: lax) else {
            Issue.record("expected the lax limit to let a refresh start")
            return
        }
        state.finish(succeeded: true, counts: true, at: 10)
        guard case .refuse(let limit) = state.decide(signedWith: state.generation, now: 20, limit: strict) else {
            Issue.record("expected the strict limit to count the three refreshes")
            return
        }
        #expect(limit == strict)
    }
}
