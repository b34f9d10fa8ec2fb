import Dispatch
import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

/// `all`, `race` and `any`.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct PromiseCombinatorTests {
    let queue = DispatchQueue(label: "tern.test.combinators")

    private func isCancelled<T>(_ promise: Promise<T>) -> Bool {
        if case .failure(APIError.cancelled)? = promise.currentResult { true } else { false }
    }

    @Test func allKeepsTheOrderGivenWhateverOrderTheyFinishIn() async throws {
        let pending = (0..<5).map { _ in Promise<Int>.pending(in: queue) }
        let all = Promise.all(pending.map(\.promise), in: queue)
        for index in [3, 1, 4, 0, 2] { pending[index].resolver.fulfill(index * 10) }
        #expect(try await all.value == [0, 10, 20, 30, 40])
        #expect(try await Promise<Int>.all([], in: queue).value == [])
    }

    @Test func allFailsWithTheFirstErrorAndCancelsTheRest() async {
        let pending = (0..<3).map { _ in Promise<Int>.pending(in: queue) }
        let all = Promise.all(pending.map(\.promise), in: queue)
        pending[1].resolver.reject(TestError(code: 2))
        await #expect(throws: TestError(code: 2)) { try await all.value }
        #expect(isCancelled(pending[0].promise))
        #expect(isCancelled(pending[2].promise))
    }

    @Test func cancellingAllCancelsEveryPromise() {
        let pending = (0..<3).map { _ in Promise<Int>.pending(in: queue) }
        Promise.all(pending.map(\.promise), in: queue).cancel()
        #expect(pending.allSatisfy { isCancelled($0.promise) })
    }

    @Test func allOverTenThousandSettledPromises() async throws {
        let promises = (0..<10_000).map { Promise(value: $0, in: queue) }
        let values = try await Promise.all(promises, in: queue).value
        #expect(values == Array(0..<10_000))
    }

    @Test func allWithALimitNeverRunsMoreAtOnce() async throws {
        let running = Recorder<Int>()
        let counter = Counter()
        let work: [@Sendable () -> Promise<Int>] = (0..<20).map { index in
            {
                running.append(counter.add(1))
                return Promise<Int>(in: .global()) { resolve, _ in
                    DispatchQueue.global().asyncAfter(deadline: .now() + 0.002) {
                        _ = counter.add(-1)
                        resolve(index)
                    }
                }
            }
        }
        let values = try await Promise.all(maxConcurrent: 3, in: queue, work).value
        #expect(values == Array(0..<20))
        #expect(running.items.max() ?? 0 <= 3)
        #expect(running.items.count == 20)
    }

    @Test func allWithALimitStopsStartingAfterAFailure() async {
        let started = Counter()
        let work: [@Sendable () -> Promise<Int>] = (0..<10).map { index in
            {
                _ = started.add(1)
                return index == 1 ? Promise(error: TestError(code: 1)) : Promise(value: index)
            }
        }
        await #expect(throws: TestError(code: 1)) { try await Promise.all(maxConcurrent: 1, in: queue, work).value }
        #expect(started.value == 2)
    }

    @Test func raceTakesTheFirstOutcomeAndCancelsTheRest() async throws {
        let pending = (0..<3).map { _ in Promise<Int>.pending(in: queue) }
        let race = Promise.race(pending.map(\.promise), in: queue)
        pending[2].resolver.fulfill(2)
        #expect(try await race.value == 2)
        #expect(isCancelled(pending[0].promise))
        let failed = Promise.race([Promise<Int>(error: TestError(code: 3))], in: queue)
        await #expect(throws: TestError(code: 3)) { try await failed.value }
        await #expect(throws: APIError.self) { try await Promise<Int>.race([], in: queue).value }
    }

    @Test(arguments: ["all", "race", "any"])
    func theLosersAreCancelledBeforeTheCombinedPromiseSettles(combinator: String) {
        // What runs the moment the combined promise settles finds no loser still pending.
        let pending = (0..<3).map { _ in Promise<Int>.pending(in: queue) }
        let promises = pending.map(\.promise)
        let losersPending = Locked<[Bool]?>(nil)
        func watch<T>(_ combined: Promise<T>) {
            combined.register(Callback(queue: nil) { _, _ in
                losersPending.withLock { $0 = [promises[0].isPending, promises[2].isPending] }
            }, asDependent: false)
        }
        switch combinator {
        case "all": watch(Promise.all(promises, in: queue))
        case "race": watch(Promise.race(promises, in: queue))
        default: watch(Promise.any(promises, in: queue))
        }
        if combinator == "any" { pending[1].resolver.fulfill(1) } else { pending[1].resolver.reject(TestError(code: 1)) }
        #expect(losersPending.withLock { $0 } == [false, false])
    }

    @Test func allWithALimitCancelsWhatRunsBeforeItsFailureIsHeard() async {
        // What runs the moment the failure is heard finds none of the running work still
        // pending, and the failure heard is the one that stopped the run, not the cancel of
        // another (whose own failure comes on another thread while the run cancels the rest).
        for _ in 0..<300 {
            let pending = (0..<3).map { _ in Promise<Int>.pending(in: queue) }
            let promises = pending.map(\.promise)
            let work: [@Sendable () -> Promise<Int>] = promises.map { promise in { promise } }
            let combined = Promise.all(maxConcurrent: 3, in: queue, work)
            let othersPending = Locked<[Bool]?>(nil)
            combined.register(Callback(queue: nil) { _, _ in
                othersPending.withLock { $0 = [promises[0].isPending, promises[2].isPending] }
            }, asDependent: false)
            pending[1].resolver.reject(TestError(code: 1))
            await #expect(throws: TestError(code: 1)) { try await combined.value }
            // The value is there once the promise has settled, perhaps before the thread that
            // settled it has run its callbacks (a sanitized run read nil here).
            #expect(await eventually(timeout: 10) { othersPending.withLock { $0 } != nil })
            #expect(othersPending.withLock { $0 } == [false, false])
            // The other pieces' producers live on: an optimized build frees what is not used
            // again, and a resolver freed unsettled fails its promise (abandoned) in a race
            // with the failure.
            withExtendedLifetime(pending) {}
        }
    }

    @Test func anyTakesTheFirstSuccessOrReportsEveryError() async throws {
        let pending = (0..<3).map { _ in Promise<Int>.pending(in: queue) }
        let any = Promise.any(pending.map(\.promise), in: queue)
        pending[0].resolver.reject(TestError(code: 1))
        pending[1].resolver.fulfill(1)
        #expect(try await any.value == 1)
        #expect(isCancelled(pending[2].promise))

        let failures = Promise.any([Promise<Int>(error: TestError(code: 1)), Promise(error: TestError(code: 2))], in: queue)
        let result = await failures.result
        guard case .failure(APIError.promise(.allFailed(let errors))) = result else {
            Issue.record("expected allFailed, got \(result)")
            return
        }
        #expect(errors.compactMap { ($0 as? TestError)?.code } == [1, 2])
    }
}

/// A thread-safe counter that returns the new value.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func add(_ delta: Int) -> Int {
        lock.lock()
        defer { lock.unlock() }
        count += delta
        return count
    }
    var value: Int { add(0) }
}
