import Dispatch
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting
import Foundation

/// Where callbacks run.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct PromiseQueueTests {
    let owner = TaggedQueue("tern.test.owner")
    let other = TaggedQueue("tern.test.other")

    @Test func callbacksRunOnThePromisesQueueByDefault() async throws {
        let seen = Recorder<String?>()
        let value = try await Promise(value: 1, in: owner.queue)
            .map { value -> Int in seen.append(TaggedQueue.current); return value + 1 }
            .onSuccess { _ in seen.append(TaggedQueue.current) }
            .finally { seen.append(TaggedQueue.current) }
            .value
        #expect(value == 2)
        #expect(seen.items == [owner.label, owner.label, owner.label])
    }

    /// `wait()` on the main actor, for a chain with a step on the main queue: the step waits
    /// for `wait()` to return, so the promise cannot settle in time, and the timeout says why
    /// and what to do (it said only "The promise timed out after 1.0 s.").
    @Test @MainActor func waitingOnTheMainActorForAStepOnTheMainQueueSaysWhyItTimedOut() async throws {
        let promise = Promise(value: 1, in: .global()).map(in: .main) { $0 + 1 }
        let error = #expect(throws: APIError.self) { try promise.wait(timeout: 1) }
        let message = error.map { "\($0)" } ?? ""
        #expect(message.contains("wait(), which held the main queue") && message.contains("call wait() off the main queue"), "\(message)")
        #expect(try await promise.value == 2)   // the step ran once wait() returned
        // Off the main queue, a timeout says nothing of it.
        let (pending, resolver) = Promise<Int>.pending(in: .global())
        let elsewhere = await Task.onTestThreads { #expect(throws: APIError.self) { try pending.wait(timeout: 0.1) } }.value
        #expect(elsewhere.map { "\($0)" } == "The promise timed out after 0.1 s.")
        resolver.fulfill(0)
    }

    @Test func aQueueGivenPerCallbackWins() async throws {
        let seen = Recorder<String?>()
        _ = try await Promise(value: 1, in: owner.queue)
            .map(in: other.queue) { value -> Int in seen.append(TaggedQueue.current); return value }
            .map { value -> Int in seen.append(TaggedQueue.current); return value }
            .onSuccess(in: other.queue) { _ in seen.append(TaggedQueue.current) }
            .finally(in: other.queue) {}
            .value
        // A derived promise inherits its source's queue, not the queue of the step that made it.
        #expect(seen.items == [other.label, owner.label, other.label])
    }

    @Test func eachStepOfAChainRunsOnItsQueueAfterAResolveFromElsewhere() async throws {
        let (source, resolver) = Promise<Int>.pending(in: owner.queue)
        let seen = Recorder<String?>()
        var tail = source
        for _ in 0..<10 {
            tail = tail.map { value in seen.append(TaggedQueue.current); return value + 1 }
        }
        DispatchQueue.global().async { resolver.fulfill(0) }
        #expect(try await tail.value == 10)
        #expect(seen.items == Array(repeating: owner.label, count: 10))
    }

    /// Combined promises deliver where the promises given do, as a chain's steps do, never on
    /// the main queue by default: a program whose main thread waits for the answer never gets it
    /// there. Each combinator's callback, given no queue, runs on the owner's.
    @Test func combinedPromisesDeliverWhereTheirPromisesDo() async throws {
        let seen = Recorder<String?>()
        let queue = owner.queue
        let one: @Sendable () -> Promise<Int> = { Promise(value: 1, in: queue) }
        let failing = { Promise<Int>(error: URLError(.badURL), in: queue) }
        _ = try await Promise.all([one(), one()]).onSuccess { _ in seen.append(TaggedQueue.current) }.value
        _ = try await Promise.all(maxConcurrent: 1, [one, one]).onSuccess { _ in seen.append(TaggedQueue.current) }.value
        _ = try await Promise.race([one(), one()]).onSuccess { _ in seen.append(TaggedQueue.current) }.value
        _ = try await Promise.any([failing(), one()]).onSuccess { _ in seen.append(TaggedQueue.current) }.value
        #expect(seen.items == Array(repeating: owner.label, count: 4))
        // A queue given still wins.
        _ = try await Promise.all([one()], in: other.queue).onSuccess { _ in seen.append(TaggedQueue.current) }.value
        #expect(seen.items.last == other.label)
    }

    @Test func theAsyncBridgeNeedsNoQueueToBeServiced() async throws {
        // The owner queue is blocked until the value has been read: the bridge must not use it.
        let (promise, resolver) = Promise<Int>.pending(in: owner.queue)
        let gate = DispatchSemaphore(value: 0)
        owner.queue.async { gate.wait() }
        DispatchQueue.global().async { resolver.fulfill(3) }
        #expect(try await promise.value == 3)
        gate.signal()
    }

    /// Side effects used to be siblings on one promise: `finally` on one queue could run before
    /// `onSuccess` on another had returned (1 run in 6, loaded). Each step now runs after every
    /// step written above it.
    @Test func stepsRunInTheOrderWrittenAcrossQueues() async throws {
        let first = DispatchQueue(label: "tern.test.order.first")
        let second = DispatchQueue(label: "tern.test.order.second")
        for _ in 0..<20 {
            let log = Recorder<String>()
            let (source, resolver) = Promise<Int>.pending(in: first)
            let end = source
                .map(in: first) { $0 + 1 }
                .onSuccess(in: second) { _ in
                    Thread.sleep(forTimeInterval: 0.002)
                    log.append("onSuccess")
                }
                .then(in: first) { value -> Promise<Int> in
                    log.append("then")
                    return Promise(value: value, in: second)
                }
                .onError(in: first) { _ in log.append("onError") }
                .onResult(in: second) { _ in
                    Thread.sleep(forTimeInterval: 0.001)
                    log.append("onResult")
                }
                .finally(in: first) { log.append("finally") }
            resolver.fulfill(1)
            #expect(try await end.value == 2)
            #expect(log.items == ["onSuccess", "then", "onResult", "finally"])
        }
    }

    @Test func aFailurePassesSideEffectsInOrderToo() async throws {
        let first = DispatchQueue(label: "tern.test.order.first")
        let second = DispatchQueue(label: "tern.test.order.second")
        let log = Recorder<String>()
        let end = Promise<Int>(error: TestError(), in: first)
            .onError(in: second) { _ in
                Thread.sleep(forTimeInterval: 0.005)
                log.append("onError")
            }
            .onSuccess(in: first) { _ in log.append("onSuccess") }
            .finally(in: first) { log.append("finally") }
        _ = await end.result
        #expect(log.items == ["onError", "finally"])
    }
}
