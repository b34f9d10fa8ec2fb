import Dispatch
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import Foundation

/// The bridge to async/await, both ways.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct PromiseAsyncTests {
    let queue = DispatchQueue(label: "tern.test.async")

    @Test func valueAndResultOfAPromiseResolvedElsewhere() async throws {
        let (promise, resolver) = Promise<String>.pending(in: queue)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.01) { resolver.fulfill("late") }
        #expect(try await promise.value == "late")
        let result = await promise.result
        #expect(try result.get() == "late")
    }

    @Test func cancellingTheAwaitingTaskCancelsThePromise() async throws {
        let (promise, resolver) = Promise<Int>.pending(in: queue)
        let handled = Promise<Void>.pending(in: queue)
        resolver.onCancel { handled.resolver.fulfill() }
        let task = Task.onTestThreads { try await promise.value }
        task.cancel()
        await #expect(throws: APIError.self) { try await task.value }
        try await handled.promise.value
        #expect(resolver.isCancelled)
    }

    @Test func aPromiseMadeFromAsyncCode() async throws {
        let promise = Promise(in: queue) { () async throws -> Int in
            try await Task.sleep(nanoseconds: 1_000_000)
            return 11
        }
        #expect(try await promise.map { $0 + 1 }.value == 12)
        let failing = Promise(in: queue) { () async throws -> Int in throw TestError(code: 4) }
        await #expect(throws: TestError(code: 4)) { try await failing.value }
    }

    @Test func cancellingAPromiseMadeFromAsyncCodeCancelsItsTask() async throws {
        let sawCancellation = Promise<Void>.pending(in: queue)
        let promise = Promise(in: queue) { () async throws -> Int in
            do {
                try await Task.sleep(nanoseconds: 30_000_000_000)
            } catch {
                sawCancellation.resolver.fulfill()
                throw error
            }
            return 0
        }
        promise.cancel()
        try await sawCancellation.promise.value
        await #expect(throws: APIError.self) { try await promise.value }
    }
}
