import Dispatch
import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

/// The Promises/A+ rules that apply to Swift, plus the "Zalgo" rule and bad use.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct PromiseTests {
    let background = TaggedQueue("tern.test.background")

    // MARK: 2.1 States

    @Test func aFulfilledPromiseNeverChanges() async throws {
        let (promise, resolver) = Promise<Int>.pending(in: background.queue)
        resolver.fulfill(1)
        resolver.fulfill(2)
        resolver.reject(TestError())
        promise.cancel()
        #expect(try await promise.value == 1)
    }

    @Test func aRejectedPromiseNeverChanges() async throws {
        let (promise, resolver) = Promise<Int>.pending(in: background.queue)
        resolver.reject(TestError(code: 7))
        resolver.fulfill(2)
        await #expect(throws: TestError(code: 7)) { try await promise.value }
    }

    // MARK: 2.2 then

    @Test func callbacksRunOnceEachAndInRegistrationOrder() async throws {
        let (promise, resolver) = Promise<Int>.pending(in: background.queue)
        let log = Recorder<String>()
        promise.onSuccess { log.append("a\($0)") }
            .onError { _ in log.append("error") }
            .finally { log.append("b") }
            .onSuccess { log.append("c\($0)") }
        resolver.fulfill(1)
        resolver.fulfill(2)
        _ = try await promise.finally(in: background.queue) {}.value
        #expect(log.items == ["a1", "b", "c1"])
    }

    @Test func errorsSkipTransformsAndReachTheEnd() async {
        let log = Recorder<String>()
        let result = Promise<Int>(error: TestError(code: 3), in: background.queue)
            .map { value -> Int in log.append("map"); return value }
            .then { value -> Promise<Int> in log.append("then"); return Promise(value: value) }
            .onSuccess { _ in log.append("success") }
        await #expect(throws: TestError(code: 3)) { try await result.value }
        #expect(log.items.isEmpty)
    }

    @Test func aThrowingStepRejectsTheDerivedPromise() async {
        let result = Promise<Int>(value: 1, in: background.queue).map { _ -> Int in throw TestError(code: 9) }
        await #expect(throws: TestError(code: 9)) { try await result.value }
        let flat = Promise<Int>(value: 1, in: background.queue).then { _ -> Promise<Int> in throw TestError(code: 8) }
        await #expect(throws: TestError(code: 8)) { try await flat.value }
    }

    @Test func thenAdoptsTheStateOfTheReturnedPromise() async throws {
        let (inner, innerResolver) = Promise<String>.pending(in: background.queue)
        let chained = Promise<Int>(value: 2, in: background.queue).then { _ in inner }
        try await Task.sleep(nanoseconds: 10_000_000)
        #expect(chained.isPending)
        innerResolver.fulfill("done")
        #expect(try await chained.value == "done")
    }

    @Test func chainingInTheOspreyStyle() async throws {
        let queue = background.queue
        let user: @Sendable () -> Promise<Int> = { Promise(value: 42, in: queue) }
        let favorites: @Sendable (Int) -> Promise<[String]> = { Promise(value: ["\($0)"], in: queue) }
        let log = Recorder<String>()
        let done = Promise<Void>.pending(in: background.queue)
        user()
            .then(in: .global(), favorites)
            .onSuccess(in: background.queue) { log.append("success \($0)") }
            .onError(in: .global()) { _ in log.append("error") }
            .finally(in: background.queue) { done.resolver.fulfill() }
        try await done.promise.value
        #expect(log.items == ["success [\"42\"]"])
    }

    // MARK: 2.3 The resolution procedure

    @Test func aPromiseResolvedWithItselfFails() async {
        let (source, resolver) = Promise<Int>.pending(in: background.queue)
        let box = Recorder<Promise<Int>>()
        let loop = source.then { _ in box.items[0] }
        box.append(loop)
        resolver.fulfill(1)
        await #expect(throws: APIError.self) { try await loop.value }
        if case .failure(APIError.promise(.resolvedWithItself))? = loop.currentResult {} else {
            Issue.record("expected resolvedWithItself, got \(String(describing: loop.currentResult))")
        }
    }

    // MARK: Zalgo

    @Test func callbacksOnASettledPromiseNeverRunInsideRegistration() async throws {
        let promise = Promise(value: 1, in: background.queue)
        let registrationReturned = Recorder<Bool>()
        let observed = Recorder<Bool>()
        let done = Promise<Void>.pending(in: background.queue)
        background.queue.sync {
            promise.onSuccess { _ in
                observed.append(registrationReturned.items.first ?? false)
                done.resolver.fulfill()
            }
            registrationReturned.append(true)
        }
        try await done.promise.value
        #expect(observed.items == [true])
    }

    @Test func aCallbackMayRegisterAndCancelWithoutDeadlock() async throws {
        let (promise, resolver) = Promise<Int>.pending(in: background.queue)
        let inner = Promise<Void>.pending(in: background.queue)
        promise.onSuccess { _ in
            promise.cancel()  // settled already: no effect, and no lock held
            promise.onSuccess { _ in inner.resolver.fulfill() }
        }
        resolver.fulfill(1)
        try await inner.promise.value
        #expect(try promise.currentResult?.get() == 1)
    }

    // MARK: Bad use

    @Test func releasingAResolverUnsettledFailsThePromiseAsAbandoned() async {
        let promise = Promise<Int>(in: background.queue) { _, _ in }
        await #expect(throws: APIError.self) { try await promise.value }
        if case .failure(APIError.promise(.abandoned))? = promise.currentResult {} else {
            Issue.record("expected abandoned, got \(String(describing: promise.currentResult))")
        }
    }

    @Test func anErrorThrownByTheBodyRejects() async {
        let promise = Promise<Int>(in: background.queue) { _, _ in throw TestError(code: 5) }
        await #expect(throws: TestError(code: 5)) { try await promise.value }
    }

    @Test func anAbandonedPendingChainIsFreed() async throws {
        let watched: (source: WeakRef<Promise<Int>>, tail: WeakRef<Promise<String>>)
        do {
            let (source, resolver) = Promise<Int>.pending(in: background.queue)
            let tail = source.map { $0 + 1 }.then { Promise(value: "\($0)") }.map { $0 + "!" }
            tail.onSuccess { _ in }
            watched = (WeakRef(source), WeakRef(tail))
            _ = resolver
        }
        // The resolver went away unsettled: the chain fails as abandoned and then is released.
        #expect(await eventually { watched.source.isFreed && watched.tail.isFreed })
    }

    @Test func aFinishedChainIsFreed() async throws {
        let watched: WeakRef<Promise<Int>>
        do {
            let tail = Promise(value: 1, in: background.queue).map { $0 + 1 }.then { Promise(value: $0) }
            watched = WeakRef(tail)
            #expect(try await tail.value == 2)
        }
        #expect(await eventually { watched.isFreed })
    }

    // MARK: The remaining steps

    @Test func recoverTurnsErrorsIntoValuesButNotCancellation() async throws {
        let recovered = Promise<Int>(error: TestError(), in: background.queue).recover { _ in 5 }
        #expect(try await recovered.value == 5)
        let viaPromise = Promise<Int>(error: TestError(), in: background.queue).recover { _ in Promise(value: 6) }
        #expect(try await viaPromise.value == 6)
        // A body that only throws, written as a user first writes it: not ambiguous.
        let rethrown = Promise<Int>(error: TestError(code: 1), in: background.queue).recover { error in throw error is TestError ? TestError(code: 2) : error }
        await #expect(throws: TestError(code: 2)) { try await rethrown.value }
        let (source, resolver) = Promise<Int>.pending(in: background.queue)
        let notRecovered = source.recover { _ in 7 }
        source.cancel()
        await #expect(throws: APIError.self) { try await notRecovered.value }
        #expect(resolver.isCancelled)
    }

    @Test func validateRejectsWhatFailsThePredicate() async throws {
        let valid = Promise(value: 4, in: background.queue).validate { $0.isMultiple(of: 2) }
        #expect(try await valid.value == 4)
        let invalid = Promise(value: 3, in: background.queue).validate { $0.isMultiple(of: 2) }
        await #expect(throws: APIError.self) { try await invalid.value }
    }

    @Test func finallyRunsBeforeTheNextStep() async throws {
        let log = Recorder<String>()
        let value = try await Promise(value: 1, in: background.queue)
            .finally { log.append("finally") }
            .map { value -> Int in log.append("map"); return value }
            .value
        #expect(value == 1)
        #expect(log.items == ["finally", "map"])
    }

    @Test func errorsDescribeThemselves() {
        #expect(APIError.timeout(.init(interval: 1.5)).description == "The promise timed out after 1.5 s.")
        #expect(APIError.promise(.allFailed([TestError(), TestError()])).description.hasPrefix("All 2 promises failed"))
        #expect(APIError.cancelled.isCancellation)
        #expect(!APIError.promise(.abandoned).isCancellation)
    }
}
