import Dispatch
import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting

/// `timeout`, `delay` and `retry`. These check order and outcome, never speed: the machines
/// are shared, so the only bounds are generous lower ones.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct PromiseTimingTests {
    let queue = DispatchQueue(label: "tern.test.timing")

    @Test func timeoutFailsAPromiseThatTakesTooLongAndCancelsIt() async throws {
        let (slow, resolver) = Promise<Int>.pending(in: queue)
        let started = Date()
        let timed = slow.timeout(0.05)
        await #expect(throws: APIError.self) { try await timed.value }
        #expect(Date().timeIntervalSince(started) >= 0.05)
        guard case .failure(APIError.timeout(let timeout))? = timed.currentResult else {
            Issue.record("expected timedOut, got \(String(describing: timed.currentResult))")
            return
        }
        #expect(timeout.interval == 0.05 && timeout.url == nil)
        // The source is cancelled as the timed promise lets go of it, just after it delivers the
        // timeout: on the timer's thread, which a loaded machine can hold back (seen under the
        // thread sanitizer, the test taking 13 seconds).
        #expect(await eventually { resolver.isCancelled })
    }

    @Test func timeoutLetsAFastPromiseThrough() async throws {
        #expect(try await Promise(value: 1, in: queue).timeout(5).value == 1)
    }

    /// Code that takes an optional clock (a `TestClock` in its tests, none in the app) passes
    /// it on as it is: `nil` waits in real time.
    @Test func anOptionalClockIsPassedOnAsItIs() async throws {
        let testClock = TestClock()
        let given: (any APIClock)? = testClock
        let delayed = Promise(value: 1, in: queue).delay(5, clock: given)
        #expect(await testClock.waitForScheduled(1))
        #expect(delayed.currentResult == nil)
        testClock.advance(by: 5)
        #expect(try await delayed.value == 1)
        let none: (any APIClock)? = nil
        #expect(try await Promise(value: 2, in: queue).delay(0.01, clock: none).timeout(30, clock: none).value == 2)
        #expect(try await Promise.retry(2, delay: 0.01, clock: none) { Promise(value: 3, in: queue) }.value == 3)
    }

    @Test func delayHoldsTheValueBack() async throws {
        let started = Date()
        #expect(try await Promise(value: 1, in: queue).delay(0.03).value == 1)
        #expect(Date().timeIntervalSince(started) >= 0.03)
        let failed = Promise<Int>(error: TestError(), in: queue).delay(30)
        await #expect(throws: TestError()) { try await failed.value }
    }

    @Test func retryRunsUntilSuccess() async throws {
        let attempts = Counter()
        let promise = Promise<Int>.retry(5, delay: 0.001) {
            attempts.add(1) < 3 ? Promise(error: TestError()) : Promise(value: 42)
        }
        #expect(try await promise.value == 42)
        #expect(attempts.value == 3)
    }

    @Test func retryGivesUpWithTheLastError() async throws {
        let attempts = Counter()
        let promise = Promise<Int>.retry(3) { Promise(error: TestError(code: attempts.add(1))) }
        await #expect(throws: TestError(code: 3)) { try await promise.value }
        #expect(attempts.value == 3)
    }

    @Test func cancellingARetryStopsTheWaitForTheNextAttempt() async throws {
        let attempts = Counter()
        // The wait is far longer than the test may take, so only cancellation can end it.
        let promise = Promise<Int>.retry(3, delay: 30) {
            _ = attempts.add(1)
            return Promise(error: TestError())
        }
        #expect(await eventually { attempts.value == 1 })
        promise.cancel()
        let result = await promise.result
        guard case .failure(APIError.cancelled) = result else {
            Issue.record("expected cancellation, got \(result)")
            return
        }
        #expect(attempts.value == 1)
    }

    /// An infinite or huge interval used to trap converting to nanoseconds.
    @Test(arguments: [TimeInterval.infinity, .greatestFiniteMagnitude])
    func anEndlessTimeoutNeverFires(interval: TimeInterval) async throws {
        #expect(try await Promise(value: 1, in: queue).timeout(interval).value == 1)
        let (slow, resolver) = Promise<Int>.pending(in: queue)
        let timed = slow.timeout(interval)
        resolver.fulfill(2)
        #expect(try await timed.value == 2)
    }

    @Test(arguments: [TimeInterval.infinity, .greatestFiniteMagnitude])
    func anEndlessDelayHoldsTheValueUntilCancelled(interval: TimeInterval) async throws {
        let delayed = Promise(value: 1, in: queue).delay(interval)
        try await Task.sleep(nanoseconds: 20_000_000)
        #expect(delayed.isPending)
        delayed.cancel()
        await #expect(throws: APIError.self) { try await delayed.value }
    }
}
