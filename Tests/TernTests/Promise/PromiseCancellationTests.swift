import Foundation
import Dispatch
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

/// Cancellation, down a chain and up it.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct PromiseCancellationTests {
    let queue = DispatchQueue(label: "tern.test.cancellation")

    private func isCancelled<T>(_ promise: Promise<T>) -> Bool {
        if case .failure(APIError.cancelled)? = promise.currentResult { true } else { false }
    }

    @Test func cancelSettlesAtOnceAndRunsTheProducersHandler() async {
        let (promise, resolver) = Promise<Int>.pending(in: queue)
        let handled = Recorder<Bool>()
        resolver.onCancel { handled.append(true) }
        promise.cancel()
        promise.cancel()
        #expect(isCancelled(promise))
        #expect(handled.items == [true])
        resolver.fulfill(1)
        #expect(isCancelled(promise))
    }

    /// The cancel's own handlers run before anyone hears "cancelled": whoever awaits the result,
    /// reads it, or registers a callback meanwhile, from any thread, finds what they did (a
    /// download's bytes kept for a resume). Before, the result showed as soon as it was set.
    @Test func nobodyHearsOfACancelBeforeItsHandlersHaveRun() async {
        let (promise, resolver) = Promise<Int>.pending(in: queue)
        let handlerStarted = DispatchSemaphore(value: 0)
        let handlerMayEnd = DispatchSemaphore(value: 0)
        let handled = Recorder<Bool>()
        resolver.onCancel {
            handlerStarted.signal()
            handlerMayEnd.wait()
            handled.append(true)
        }
        let canceller = Thread { promise.cancel() }
        canceller.start()
        handlerStarted.wait()
        // The promise is cancelled, its handler not done: what each way of asking sees.
        #expect(promise.currentResult == nil)
        #expect(resolver.isCancelled)
        let heard = Recorder<String>()
        promise.onError(in: .global()) { _ in heard.append("callback: handled \(handled.items == [true])") }
        let waiting = Task.onTestThreads { () async -> Bool in
            _ = await promise.result
            return handled.items == [true]
        }
        try? await Task.sleep(for: .milliseconds(50))
        #expect(heard.items.isEmpty)
        handlerMayEnd.signal()
        #expect(await waiting.value)
        #expect(await eventually { heard.items == ["callback: handled true"] })
        #expect(isCancelled(promise))
    }

    /// Down a chain of three, the middle promise, cancelled in turn, is not heard of (nor read)
    /// before the source's handler has run either.
    @Test func aChainsMiddleIsHeardOfAfterTheSourcesHandler() async {
        let (source, resolver) = Promise<Int>.pending(in: queue)
        let handlerStarted = DispatchSemaphore(value: 0)
        let handlerMayEnd = DispatchSemaphore(value: 0)
        resolver.onCancel {
            handlerStarted.signal()
            handlerMayEnd.wait()
        }
        let middle = source.map { $0 + 1 }
        let tail = middle.map { $0 * 2 }
        Thread { tail.cancel() }.start()
        handlerStarted.wait()
        #expect(middle.currentResult == nil)
        #expect(tail.currentResult == nil)
        handlerMayEnd.signal()
        #expect(await eventually { isCancelled(middle) && isCancelled(tail) && isCancelled(source) })
        withExtendedLifetime(resolver) {}   // let go unsettled, it would fail the source as abandoned
    }

    @Test func aHandlerAddedAfterCancellationRunsAtOnce() {
        let (promise, resolver) = Promise<Int>.pending(in: queue)
        promise.cancel()
        let handled = Recorder<Bool>()
        resolver.onCancel { handled.append(true) }
        #expect(handled.items == [true])
    }

    @Test func cancellingASourceFailsTheWholeChainDownstream() async {
        let (source, resolver) = Promise<Int>.pending(in: queue)
        let tail = source.map { $0 + 1 }.then { Promise(value: $0) }
        source.cancel()
        await #expect(throws: APIError.self) { try await tail.value }
        #expect(isCancelled(tail))
        _ = resolver
    }

    @Test func cancellingTheEndOfAChainCancelsTheSourceNobodyElseNeeds() async {
        let (source, resolver) = Promise<Int>.pending(in: queue)
        let handled = Recorder<Bool>()
        resolver.onCancel { handled.append(true) }
        let tail = source.map { $0 + 1 }.map { $0 * 2 }
        tail.cancel()
        #expect(isCancelled(source))
        #expect(handled.items == [true])
    }

    @Test func cancellingAThenCancelsThePromiseItWaitsOn() async throws {
        let (inner, innerResolver) = Promise<Int>.pending(in: queue)
        let started = Promise<Void>.pending(in: queue)
        let chained = Promise(value: 1, in: queue).then { _ -> Promise<Int> in
            started.resolver.fulfill()
            return inner
        }
        try await started.promise.value
        // `then` adopts `inner` in the same callback, on `queue`, right after its body returns.
        queue.sync {}
        chained.cancel()
        #expect(isCancelled(inner))
        #expect(innerResolver.isCancelled)
    }

    @Test func aSourceWithAnotherDependentIsNotCancelled() {
        let (source, resolver) = Promise<Int>.pending(in: queue)
        let first = source.map { $0 + 1 }
        let second = source.map { $0 + 2 }
        first.cancel()
        #expect(source.isPending)
        second.cancel()
        #expect(isCancelled(source))
        _ = resolver
    }

    @Test func aSourceWithASideEffectObserverIsNotCancelledByDependents() {
        let (source, resolver) = Promise<Int>.pending(in: queue)
        source.onSuccess { _ in }
        source.map { $0 + 1 }.cancel()
        #expect(source.isPending)
        resolver.fulfill(1)
    }

    @Test func cancellingAfterSuccessChangesNothing() async throws {
        let promise = Promise(value: 1, in: queue).map { $0 + 1 }
        #expect(try await promise.value == 2)
        promise.cancel()
        #expect(try await promise.value == 2)
    }

    /// Cancellation walks up a chain without recursion, as delivery walks down it: the stack
    /// stays flat however long the chain.
    @Test func cancellingTheTailOfAVeryLongChainReachesItsSource() {
        let (source, resolver) = Promise<Int>.pending(in: queue)
        let handled = Recorder<Bool>()
        resolver.onCancel { handled.append(true) }
        var tail = source
        for _ in 0..<30_000 { tail = tail.map { $0 } }
        tail.cancel()
        #expect(isCancelled(source))
        #expect(handled.items == [true])
    }

    /// A poll loop written as a recursive `then` is a chain of promises each following the next.
    /// A tenth as long under the thread sanitizer: each step is a hop through the queue, and
    /// 30,000 of them, sanitized beside seven other tests, once took past the time limit.
    @Test func cancellingARecursivePollLoopReachesTheStepInFlight() async throws {
        let (last, lastResolver) = Promise<Int>.pending(in: queue)
        let handled = Recorder<Bool>()
        lastResolver.onCancel { handled.append(true) }
        let reached = Promise<Void>.pending(in: queue)
        @Sendable func poll(_ remaining: Int) -> Promise<Int> {
            Promise(value: remaining, in: queue).then { remaining in
                guard remaining > 0 else {
                    reached.resolver.fulfill()
                    return last
                }
                return poll(remaining - 1)
            }
        }
        let loop = poll(isThreadSanitized ? 3_000 : 30_000)
        try await reached.promise.value
        queue.sync {}  // the last `then` adopts `last` right after its body returns
        loop.cancel()
        #expect(isCancelled(last))
        #expect(handled.items == [true])
    }

    /// What a side effect returns can be cancelled, and that reaches the work when nothing
    /// else waits for it, as in `let pending = api.products().onSuccess { … }; pending.cancel()`.
    @Test func cancellingWhatASideEffectReturnsCancelsTheSource() {
        let (source, resolver) = Promise<Int>.pending(in: queue)
        let handled = Recorder<Bool>()
        resolver.onCancel { handled.append(true) }
        let pending = source.onSuccess { _ in }.onError { _ in }.finally {}
        pending.cancel()
        #expect(isCancelled(source))
        #expect(handled.items == [true])
    }
}
