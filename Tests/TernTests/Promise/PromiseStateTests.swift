import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

/// The state machine on its own: no queues, no locks. Swift Testing's macros capture their
/// argument in a closure, so every mutation happens on the line before the expectation.
@Suite(.onTestThreads) struct PromiseStateTests {
    private func callback(_ log: Recorder<Int>, _ tag: Int) -> Callback<Int> {
        Callback(queue: nil) { _, _ in log.append(tag) }
    }

    private func inert() -> Callback<Int> { Callback(queue: nil) { _, _ in } }

    @Test func onlyTheFirstSettlementCounts() throws {
        var state = PromiseState<Int>()
        let first = state.settle(.success(1))
        let second = state.settle(.success(2))
        let third = state.settle(.failure(TestError()))
        let cancelled = state.cancel()
        #expect(first != nil)
        #expect(second == nil && third == nil && cancelled == nil)
        #expect(try state.result?.get() == 1)
    }

    @Test func settlingWithoutCallbacksNeedsNoDelivery() throws {
        var state = PromiseState<Int>()
        let settlement = state.settle(.success(1))
        #expect(try #require(settlement).needsDelivery == false)
    }

    @Test func callbacksRegisteredWhilePendingAreDeliveredOnSettlementInOrder() throws {
        var state = PromiseState<Int>()
        let log = Recorder<Int>()
        let startedFirst = state.register(callback(log, 1))
        let startedSecond = state.register(callback(log, 2))
        #expect(!startedFirst && !startedSecond)
        let settlement = state.settle(.success(7))
        #expect(try #require(settlement).needsDelivery)
        let taken = state.takeCallbacks()
        let delivery = try #require(taken)
        var loop = DeliveryLoop(queue: nil)
        delivery.0.forEach { $0.run(delivery.1, in: &loop) }
        #expect(log.items == [1, 2])
        let rest = state.takeCallbacks()
        #expect(rest == nil)
    }

    @Test func registeringOnASettledPromiseStartsOneDeliveryLoop() throws {
        var state = PromiseState<Int>(result: .success(1))
        let log = Recorder<Int>()
        let startedFirst = state.register(callback(log, 1))
        // A loop is now running: later callbacks join it rather than start another.
        let startedSecond = state.register(callback(log, 2))
        #expect(startedFirst && !startedSecond)
        let taken = state.takeCallbacks()
        let delivery = try #require(taken)
        var count = 0
        delivery.0.forEach { _ in count += 1 }
        #expect(count == 2)
        let rest = state.takeCallbacks()
        #expect(rest == nil)
        // That loop ended, so the next registration starts a new one.
        let startedThird = state.register(callback(log, 3))
        #expect(startedThird)
    }

    @Test func cancelHandsBackHandlersAndUpstream() throws {
        final class Source: Upstream {
            func releaseInterest() -> (upstream: (any Upstream)?, delivers: Bool) { (nil, false) }
            func deliverCancel() {}
        }
        let upstream = Source()
        var state = PromiseState<Int>(upstream: upstream)
        let ranAtOnce = state.addCancelHandler {}
        #expect(!ranAtOnce)
        let cancelled = state.cancel()
        let settlement = try #require(cancelled)
        #expect(settlement.cancelHandlers.count == 1)
        #expect(settlement.releasedUpstream === upstream)
        #expect(throws: APIError.self) { try state.result?.get() }
        // A handler added after cancellation must run at once.
        let lateRunsAtOnce = state.addCancelHandler {}
        #expect(lateRunsAtOnce)
    }

    @Test func ordinarySettlementDropsHandlersAndKeepsUpstream() throws {
        var state = PromiseState<Int>()
        _ = state.addCancelHandler {}
        let settled = state.settle(.success(1))
        let settlement = try #require(settled)
        #expect(settlement.cancelHandlers.isEmpty)
        #expect(settlement.releasedUpstream == nil)
        let lateRunsAtOnce = state.addCancelHandler {}
        #expect(!lateRunsAtOnce)
    }

    @Test func theLastDependentToLeaveCancels() {
        var state = PromiseState<Int>()
        _ = state.register(inert(), asDependent: true)
        _ = state.register(inert(), asDependent: true)
        let afterFirst = state.releaseDependent()
        let afterSecond = state.releaseDependent()
        #expect(!afterFirst)
        #expect(afterSecond)
    }

    @Test func aSideEffectObserverPinsThePromise() {
        var state = PromiseState<Int>()
        _ = state.register(inert(), asDependent: true)
        _ = state.register(inert(), pinning: true)
        let shouldCancel = state.releaseDependent()
        #expect(!shouldCancel)
    }

    @Test func aSettledPromiseIsNeverCancelledByItsDependents() {
        var state = PromiseState<Int>()
        _ = state.register(inert(), asDependent: true)
        _ = state.settle(.success(1))
        let shouldCancel = state.releaseDependent()
        #expect(!shouldCancel)
    }

    @Test func waitingOnAnUpstreamAfterSettlingIsRefused() {
        final class Source: Upstream {
            func releaseInterest() -> (upstream: (any Upstream)?, delivers: Bool) { (nil, false) }
            func deliverCancel() {}
        }
        var state = PromiseState<Int>()
        let whilePending = state.wait(on: Source())
        _ = state.cancel()
        let afterwards = state.wait(on: Source())
        #expect(whilePending)
        #expect(!afterwards)
    }
}
