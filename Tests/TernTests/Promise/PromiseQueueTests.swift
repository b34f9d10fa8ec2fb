import Dispatch
import Testing
@testable import Tern

/// Where callbacks run.
@Suite(.timeLimit(.minutes(1))) struct PromiseQueueTests {
    let owner = TaggedQueue("tern.test.owner")
    let other = TaggedQueue("tern.test.other")

    @Test func callbacksRunOnThePromisesQueueByDefault() async throws {
        let seen = Recorder<String?>()
        let value = try await Promise(value: 1, in: owner.queue)
            .map { value -> Int in seen.append(TaggedQueue.current); return value + 1 }
            .onSuccess { _ in seen.append(TaggedQueue.current) }
            .ensure { seen.append(TaggedQueue.current) }
            .value
        #expect(value == 2)
        #expect(seen.items == [owner.label, owner.label, owner.label])
    }

    @Test func aQueueGivenPerCallbackWins() async throws {
        let seen = Recorder<String?>()
        _ = try await Promise(value: 1, in: owner.queue)
            .map(in: other.queue) { value -> Int in seen.append(TaggedQueue.current); return value }
            .map { value -> Int in seen.append(TaggedQueue.current); return value }
            .onSuccess(in: other.queue) { _ in seen.append(TaggedQueue.current) }
            .ensure(in: other.queue) {}
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

    @Test func theAsyncBridgeNeedsNoQueueToBeServiced() async throws {
        // The owner queue is blocked until the value has been read: the bridge must not use it.
        let (promise, resolver) = Promise<Int>.pending(in: owner.queue)
        let gate = DispatchSemaphore(value: 0)
        owner.queue.async { gate.wait() }
        DispatchQueue.global().async { resolver.fulfill(3) }
        #expect(try await promise.value == 3)
        gate.signal()
    }
}
