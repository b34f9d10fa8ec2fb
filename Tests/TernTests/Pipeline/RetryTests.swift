import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting

/// Retries follow the policy, under a test clock: no test here waits in real time.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RetryTests {
    /// A server that answers each route with a scripted list of statuses, then 200, and counts.
    final class FlakyServer: @unchecked Sendable {
        private let lock = NSLock()
        private var scripts: [String: [(Int, HTTPHeaders)]] = [:]
        private var hits: [String: Int] = [:]
        private(set) var server: LoopbackServer!

        init() throws {
            // Weak: a request may still come (a keep-alive connection, a transport's resend) as
            // the test lets go of its server; it is then hung up on.
            server = try LoopbackServer { [weak self] request in
                guard let self else { return ServerResponse().with(.hangUp) }
                lock.lock()
                hits[request.path, default: 0] += 1
                let next = scripts[request.path]?.isEmpty == false ? scripts[request.path]!.removeFirst() : (200, [:])
                lock.unlock()
                // Status 0 scripts a server that reads the request and hangs up without a word.
                guard next.0 != 0 else { return ServerResponse().with(.hangUp) }
                return ServerResponse(status: next.0, headers: next.1.merging(["Content-Type": "application/json"]), body: Data(#"{"ok": true}"#.utf8))
            }
        }

        deinit { server.stop() }

        func script(_ path: String, _ statuses: [(Int, HTTPHeaders)]) {
            lock.lock()
            scripts[path] = statuses
            lock.unlock()
        }

        func hits(_ path: String) -> Int {
            lock.lock()
            defer { lock.unlock() }
            return hits[path, default: 0]
        }
    }

    private func makeAPI(_ server: FlakyServer, _ clock: TestClock, policy: RetryPolicy = RetryPolicy(), budget: RetryBudget = .unlimited) throws -> TestAPI {
        try TestAPI(baseURL: server.server.baseURL,
                    configuration: APIConfiguration(timeout: .infinity, retryPolicy: policy, retryBudget: budget), clock: clock)
    }

    /// Advances the clock through every backoff until `promise` settles.
    private func drive<T>(_ promise: Promise<T>, _ clock: TestClock, step: TimeInterval = 60) async -> Result<T, any Error> {
        while promise.isPending {
            if clock.pendingCount > 0 { clock.advance(by: step) }
            try? await Task.sleep(nanoseconds: 1_000_000)
        }
        return await promise.result
    }

    @Test func aRetryableStatusIsRetriedWithJitteredExponentialBackoff() async throws {
        let server = try FlakyServer()
        server.script("/a", [(503, [:]), (500, [:])])
        let clock = TestClock()
        let api = try makeAPI(server, clock)
        let result = await drive(api.request(route: api.get(endpoint: "/a")) as Promise<Data>, clock)
        if case .failure(let error) = result { Issue.record("failed: \(error)") }
        #expect(server.hits("/a") == 3)
        let delays = clock.scheduledDelays
        try #require(delays.count == 2)
        #expect((0...0.5).contains(delays[0]))
        #expect((0...1.0).contains(delays[1]))
    }

    @Test func withoutJitterTheBackoffDoubles() async throws {
        let server = try FlakyServer()
        server.script("/a", [(503, [:]), (503, [:]), (503, [:])])
        let clock = TestClock()
        let api = try makeAPI(server, clock, policy: RetryPolicy(maxRetries: 3, baseDelay: 0.25, jitter: false))
        _ = await drive(api.request(route: api.get(endpoint: "/a")) as Promise<Data>, clock)
        #expect(clock.scheduledDelays == [0.25, 0.5, 1.0])
    }

    @Test func afterTheLastRetryTheFailureIsTheLastResponses() async throws {
        let server = try FlakyServer()
        server.script("/a", [(503, [:]), (503, [:]), (502, [:])])
        let clock = TestClock()
        let api = try makeAPI(server, clock)
        let result = await drive(api.request(route: api.get(endpoint: "/a")) as Promise<Data>, clock)
        guard case .failure(APIError.unacceptableStatus(let failure)) = result else {
            Issue.record("expected unacceptableStatus, got \(result)")
            return
        }
        #expect(failure.statusCode == 502)
        #expect(server.hits("/a") == 3)
    }

    /// On Linux this arrives as an empty reply (`badServerResponse`), on Apple platforms as a
    /// lost connection: retried either way, for idempotent methods only.
    @Test(arguments: [(HTTPMethod.get, 2), (.post, 1)])
    func aServerThatHangsUpIsRetriedForIdempotentMethods(method: HTTPMethod, expectedHits: Int) async throws {
        let server = try FlakyServer()
        server.script("/a", [(0, [:])])
        let clock = TestClock()
        let api = try makeAPI(server, clock)
        let result = await drive(api.request(route: api.route(method, endpoint: "/a")) as Promise<Data>, clock)
        #expect(server.hits("/a") == expectedHits)
        switch (method, result) {
        case (.get, .success): break
        case (.post, .failure(APIError.transportFailed)): break
        default: Issue.record("\(method.rawValue): unexpected \(result)")
        }
    }

    @Test(arguments: [(HTTPMethod.post, 503, 1), (.patch, 503, 1), (.get, 404, 1), (.get, 400, 1), (.put, 503, 3), (.delete, 429, 3), (.get, 408, 3)])
    func onlyIdempotentMethodsAndRetryableStatusesAreRetried(method: HTTPMethod, status: Int, expectedHits: Int) async throws {
        let server = try FlakyServer()
        server.script("/a", Array(repeating: (status, [:]), count: 5))
        let clock = TestClock()
        let api = try makeAPI(server, clock)
        _ = await drive(api.request(route: api.route(method, endpoint: "/a")) as Promise<Data>, clock)
        #expect(server.hits("/a") == expectedHits)
    }

    /// `Retry-After` in seconds or as a date is waited for as asked, up to `maxDelay`; one asking
    /// for longer is not retried sooner: the request fails with that answer.
    @Test func retryAfterInSecondsOrAsADateIsHonouredAndOnePastTheCapEndsTheRetries() async throws {
        let server = try FlakyServer()
        // HTTP dates have whole seconds, and a loaded run (the sanitizer's) can stall for many:
        // the date is far enough ahead.
        let inFiveMinutes = DateFormatter.httpDate.string(from: Date().addingTimeInterval(300))
        server.script("/a", [(503, ["Retry-After": "7"]), (429, ["Retry-After": inFiveMinutes]), (503, ["Retry-After": "600"]),
                             (503, ["Retry-After": "601"])])
        let clock = TestClock()
        let api = try makeAPI(server, clock, policy: RetryPolicy(maxRetries: 5, maxDelay: 600))
        let result = await drive(api.request(route: api.get(endpoint: "/a")) as Promise<Data>, clock)
        let delays = clock.scheduledDelays
        try #require(delays.count == 3)
        #expect(delays[0] == 7)
        #expect((240...300).contains(delays[1]))
        #expect(delays[2] == 600)
        guard case .failure(APIError.unacceptableStatus(let failure)) = result else {
            Issue.record("expected the last 503, got \(result)")
            return
        }
        #expect(failure.statusCode == 503 && failure.headers["Retry-After"] == "601")
        #expect(server.hits("/a") == 4)
    }

    @Test func transientTransportErrorsAreRetried() async throws {
        let closed = try ClosedPort()
        defer { withExtendedLifetime(closed) {} }
        let clock = TestClock()
        let api = try TestAPI(baseURL: closed.baseURL, configuration: APIConfiguration(timeout: .infinity, retryBudget: .unlimited), clock: clock)
        let result = await drive(api.request(route: api.get(endpoint: "/a")) as Promise<Data>, clock)
        guard case .failure(APIError.transportFailed(let failure)) = result else {
            Issue.record("expected transportFailed, got \(result)")
            return
        }
        #expect(failure.urlError?.code == .cannotConnectToHost)
        #expect(clock.scheduledDelays.count == 2)
    }

    @Test func cancellingDuringABackoffSettlesAtOnceAndSendsNothingMore() async throws {
        let server = try FlakyServer()
        server.script("/a", [(503, [:]), (503, [:])])
        let clock = TestClock()
        let api = try makeAPI(server, clock)
        let promise: Promise<Data> = api.request(route: api.get(endpoint: "/a"))
        #expect(await clock.waitForScheduled(1))
        promise.cancel()
        #expect(await apiError(of: promise)?.caseName == "cancelled")
        #expect(clock.pendingCount == 0)   // the backoff was called off
        clock.advance(by: 60)
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(server.hits("/a") == 1)
    }

    @Test func theBudgetStopsARetryStormAgainstAServerThatIsDown() async throws {
        let server = try FlakyServer()
        server.script("/down", Array(repeating: (503, [:]), count: 1000))
        let clock = TestClock()
        // Steps of 5 s never reach the end of the 1-hour window, so the budget is never refilled.
        let budget = RetryBudget(ratio: 0.1, minimumRetries: 5, window: 3600)
        let api = try makeAPI(server, clock, policy: RetryPolicy(maxRetries: 3), budget: budget)
        let promises: [Promise<Data>] = (0..<100).map { _ in api.request(route: api.get(endpoint: "/down")) }
        for promise in promises { _ = await drive(promise, clock, step: 5) }
        // Without a budget: 100 + 300 attempts. With it: 100 + at most 5 + 10% of 100.
        #expect(server.hits("/down") <= 115)
        #expect(server.hits("/down") > 100)
    }

    /// Idempotency goes by the method sent: an encoder may change the route's.
    @Test(arguments: [(HTTPMethod.post, HTTPMethod.get, 2), (.get, .post, 0)])
    func retriesGoByTheMethodSentNotTheRoutes(route: HTTPMethod, sent: HTTPMethod, retries: Int) async throws {
        struct MethodChanger: RequestParameters {
            let method: HTTPMethod
            var headers: HTTPHeaders { [:] }
            func encode(into draft: inout RequestDraft) throws { draft.method = method }
        }
        let server = try FlakyServer()
        server.script("/a", [(503, [:]), (503, [:])])
        let clock = TestClock()
        let api = try makeAPI(server, clock, policy: RetryPolicy(jitter: false))
        _ = await drive(api.request(route: api.route(route, endpoint: "/a"), parameters: MethodChanger(method: sent)) as Promise<Data>, clock)
        #expect(server.hits("/a") == retries + 1)
        #expect(clock.scheduledDelays.count == retries)
    }

    /// A retry that could begin only after the deadline is not waited for: the request fails at
    /// once with the answer that asked for it, a 429 or a 503, not with a timeout that hides it.
    @Test(arguments: [(429, "10"), (503, "100000000000")])
    func aRetryAfterPastTheDeadlineFailsWithItsAnswer(status: Int, retryAfter: String) async throws {
        let server = try FlakyServer()
        server.script("/a", [(status, ["Retry-After": retryAfter])])
        let api = try TestAPI(baseURL: server.server.baseURL,
                              configuration: APIConfiguration(timeout: 5, retryPolicy: RetryPolicy(maxDelay: .infinity)))
        let error = await apiError(of: api.request(route: api.get(endpoint: "/a")) as Promise<Data>)
        guard case .unacceptableStatus(let failure)? = error else {
            Issue.record("expected the \(status), got \(String(describing: error))")
            return
        }
        #expect(failure.statusCode == status)
        #expect(server.hits("/a") == 1)
    }

    /// A `Retry-After` of 3,000 years under a policy without a cap, and no timeout, used to trap
    /// in the timer: it is waited for, until the request is cancelled.
    @Test func anEndlessRetryAfterWithoutATimeoutWaitsUntilCancelled() async throws {
        let server = try FlakyServer()
        server.script("/a", [(503, ["Retry-After": "100000000000"])])
        let api = try TestAPI(baseURL: server.server.baseURL,
                              configuration: APIConfiguration(timeout: .infinity, retryPolicy: RetryPolicy(maxDelay: .infinity)))
        let promise: Promise<Data> = api.request(route: api.get(endpoint: "/a"))
        #expect(await eventually { server.hits("/a") == 1 })
        try await Task.sleep(for: .milliseconds(100))
        #expect(promise.isPending)
        promise.cancel()
        #expect(await apiError(of: promise)?.caseName == "cancelled")
        #expect(server.hits("/a") == 1)
    }

    @Test(arguments: ["-1", "1e9", "nan", "inf", "0x10", "3.5"])
    func aRetryAfterThatIsNeitherSecondsNorADateIsIgnored(value: String) {
        #expect(RetryPolicy.retryAfter(value) == nil)
        #expect(RetryPolicy.retryAfter(" 12 ") == 12)
    }

}

extension DateFormatter {
    /// The HTTP date format of RFC 9110 §5.6.7.
    static var httpDate: DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE',' dd MMM yyyy HH':'mm':'ss 'GMT'"
        return formatter
    }
}
