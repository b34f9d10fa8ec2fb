import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting

/// Cancellation, timeouts, queues and lifetime: every request settles exactly once.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct PipelineLifecycleTests {
    /// A server of its own, so that its connection count belongs to one test.
    private func stallingServer() throws -> LoopbackServer {
        try LoopbackServer { _ in ServerResponse().with(.stall(20)) }
    }

    @Test func cancellingAPromiseCancelsTheNetworkTask() async throws {
        let server = try stallingServer()
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        let promise: Promise<Data> = api.request(route: api.get(endpoint: "/slow"))
        #expect(await eventually { server.openConnections == 1 })
        promise.cancel()
        #expect(await apiError(of: promise)?.caseName == "cancelled")
        // The client closed its connection: the cancellation reached the network.
        #expect(await eventuallyClosed(server))
    }

    @Test func cancellingTheAwaitingTaskCancelsTheRequest() async throws {
        let server = try stallingServer()
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        let task = Task.onTestThreads { () async throws -> Data in try await api.request(route: api.get(endpoint: "/slow")).value }
        #expect(await eventually { server.openConnections == 1 })
        task.cancel()
        let error = await #expect(throws: APIError.self) { try await task.value }
        #expect(error?.isCancellation == true)
        #expect(await eventuallyClosed(server))
    }

    @Test func cancellingBeforeTheRequestIsSentSendsNothing() async throws {
        /// Records whether the pipeline got as far as encoding (a multipart body writes a file).
        struct Spy: RequestParameters {
            let encoded: Recorder<Bool>
            var headers: HTTPHeaders { [:] }
            func encode(into draft: inout RequestDraft) throws { encoded.append(true) }
        }
        let server = try stallingServer()
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        // Wherever the request could start is busy, so it cannot have started when it is
        // cancelled: the pipeline queue, and the libcurl thread, which then declines new work.
        let gate = DispatchSemaphore(value: 0)
        api.pipelineQueue.async(flags: .barrier) { gate.wait() }
        #if os(Linux)
        let loopGate = DispatchSemaphore(value: 0)
        let holdsLoop = (api.transport as? CurlTransport)?.runIfIdle { loopGate.wait() } ?? false
        #endif
        let encoded = Recorder<Bool>()
        let promise: Promise<Data> = api.request(route: api.get(endpoint: "/slow"), parameters: Spy(encoded: encoded))
        promise.cancel()
        gate.signal()
        #if os(Linux)
        if holdsLoop { loopGate.signal() }
        #endif
        #expect(await apiError(of: promise)?.caseName == "cancelled")
        api.pipelineQueue.sync(flags: .barrier) {}
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(server.openConnections == 0)
        #expect(encoded.items.isEmpty)
    }

    @Test(arguments: [0.5, 1.5])
    func theTimeoutIsTernsOwnAndExact(timeout: TimeInterval) async throws {
        // URLSession on Linux would fail 0.5 s at once and fire 1.5 s at 1.0 s.
        let server = try stallingServer()
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        let started = Date()
        let promise: Promise<Data> = api.request(route: api.get(endpoint: "/slow"), options: RequestOptions(timeout: timeout))
        let error = await apiError(of: promise)
        let elapsed = Date().timeIntervalSince(started)
        guard case .timeout(let failure)? = error else {
            Issue.record("expected timeout, got \(String(describing: error))")
            return
        }
        #expect(elapsed >= timeout)
        #expect(failure.interval == timeout)
        #expect(failure.description == "GET \(server.baseURL)/slow timed out after \(timeout) s.")
        #expect(await eventuallyClosed(server))
    }

    /// The timeout counts from the call, not from when the pipeline got to the request: behind
    /// 3,000 others over URLSession, that was seen to be a second later.
    @Test func theTimeoutCountsFromTheCallNotFromWhenThePipelineStarts() async throws {
        let clock = TestClock()
        let stubs = StubTransport(clock: clock)
        stubs.add(Stub(.get, "/slow", answers: StubAnswer.text("late").delayed(by: 30)))
        let api = try TestAPI(baseURL: "https://shop.example", transport: stubs, clock: clock)
        // The pipeline is busy for 3 s of the test clock's time before it starts the request.
        let busy = DispatchSemaphore(value: 0)
        api.pipelineQueue.async(flags: .barrier) { busy.wait() }
        let promise: Promise<String> = api.request(route: api.get(endpoint: "/slow"), options: RequestOptions(timeout: 5))
        clock.advance(by: 3)
        busy.signal()
        #expect(await clock.waitForScheduled(2), "the request's timeout and the answer's delay")
        #expect(clock.scheduledDelays.contains(2))
        clock.advance(by: 2)
        #expect(await apiError(of: promise)?.caseName == "timeout")
    }

    @Test func theConfigurationsTimeoutApplies() async throws {
        let server = try stallingServer()
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(timeout: 0.2))
        #expect(await apiError(of: api.request(route: api.get(endpoint: "/slow")) as Promise<Void>)?.caseName == "timeout")
    }

    @Test func callbacksRunOnTheResponseQueueUnlessToldOtherwise() async throws {
        let apiQueue = TaggedQueue("tern.test.api-responses")
        let requestQueue = TaggedQueue("tern.test.request-responses")
        let callbackQueue = TaggedQueue("tern.test.callback")
        let api = try TestAPI(responseQueue: apiQueue.queue)
        let seen = Recorder<String?>()

        let first: Promise<[Product]> = api.request(route: api.get(endpoint: "/products"))
        _ = try await first.onSuccess { _ in seen.append(TaggedQueue.current) }.map { $0 }.value
        let second: Promise<[Product]> = api.request(route: api.get(endpoint: "/products"), options: RequestOptions(responseQueue: requestQueue.queue))
        _ = try await second.onSuccess { _ in seen.append(TaggedQueue.current) }.onSuccess(in: callbackQueue.queue) { _ in seen.append(TaggedQueue.current) }.map { $0 }.value
        #expect(await eventually { seen.items.count == 3 })
        #expect(Set(seen.items) == [apiQueue.label, requestQueue.label, callbackQueue.label])
    }

    @Test func encodingRunsOffTheCallersThread() async throws {
        struct Spy: RequestParameters {
            let seen: Recorder<String?>
            var headers: HTTPHeaders { [:] }
            func encode(into draft: inout RequestDraft) throws { seen.append(TaggedQueue.current) }
        }
        let caller = TaggedQueue("tern.test.caller")
        let api = try TestAPI()
        let seen = Recorder<String?>()
        let promise: Promise<Echo> = caller.queue.sync { api.request(route: api.get(endpoint: "/echo"), parameters: Spy(seen: seen)) }
        _ = try await promise.value
        #expect(seen.items == [nil])
    }

    @Test func releasingTheAPIWhileRequestsAreInFlightLetsThemComplete() async throws {
        var api: TestAPI? = try TestAPI()
        let watched = WeakRef(api!)
        let promise: Promise<[Product]> = api!.request(route: api!.get(endpoint: "/products"))
        let slow: Promise<Void> = api!.request(route: api!.get(endpoint: "/delay/100"))
        api = nil
        #expect(try await promise.value.count == 2)
        try await slow.value
        #expect(await eventually { watched.isFreed })
    }

    @Test func twoHundredConcurrentRequestsAllSettle() async throws {
        let api = try TestAPI()
        let promises: [Promise<[Product]>] = (0..<200).map { index in
            api.request(route: api.get(endpoint: index.isMultiple(of: 10) ? "/status/503" : "/products"))
        }
        var successes = 0
        var failures = 0
        for promise in promises {
            switch await promise.result {
            case .success(let products) where products.count == 2: successes += 1
            case .failure(let error as APIError) where error.caseName == "unacceptableStatus": failures += 1
            default: Issue.record("unexpected result")
            }
        }
        #expect(successes == 180)
        #expect(failures == 20)
    }

    /// A zero, negative or NaN timeout used to switch the timeout off without a word.
    @Test(arguments: [0, -1, TimeInterval.nan, -TimeInterval.infinity])
    func aTimeoutThatIsNotPositiveIsRefusedBeforeSending(timeout: TimeInterval) async throws {
        let received = Recorder<String>()
        let server = try LoopbackServer { request in
            received.append(request.path)
            return ServerResponse()
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        let promise: Promise<Data> = api.request(route: api.get(endpoint: "/slow"), options: RequestOptions(timeout: timeout))
        let error = await apiError(of: promise)
        guard case .invalidRequest(let failure)? = error, case .invalidTimeout(let value) = failure.reason else {
            Issue.record("expected invalidTimeout, got \(String(describing: error))")
            return
        }
        #expect(value == timeout || (value.isNaN && timeout.isNaN))
        #expect(failure.description.contains("\(timeout) s"))
        let configured = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(timeout: timeout))
        #expect(await apiError(of: configured.request(route: configured.get(endpoint: "/slow")) as Promise<Data>)?.caseName == "invalidRequest")
        // The server is still reachable: a valid request arrives, the refused ones never did.
        let _: Data = try await api.request(route: api.get(endpoint: "/valid")).value
        #expect(received.items == ["/valid"])
    }

    /// A huge timeout used to trap converting to nanoseconds; an infinite one means none.
    @Test(arguments: [TimeInterval.infinity, .greatestFiniteMagnitude, 1e12])
    func anEndlessTimeoutIsNoTimeout(timeout: TimeInterval) async throws {
        let api = try TestAPI(configuration: APIConfiguration(timeout: timeout))
        let products: [Product] = try await api.request(route: api.get(endpoint: "/products"), options: RequestOptions(timeout: timeout)).value
        #expect(products.count == 2)
    }
}
