import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The request's state machine, which keeps the attempt on the wire and a backoff's wait beside
/// its state, raced by a cancel or the timeout while it waits out a retry's backoff, waits for a
/// refresh of the credentials, or has a redirect on the wire: each request settles once, with
/// the typed error of what ended it; nothing is sent after the end, and the backoff's timer does
/// not fire after it. Through an API with a cache and without one.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct StateMachineRaceAttackTests {
    typealias Seam = MetricsSeamAttackTests
    typealias Pass = PassThroughCacheAttackTests

    enum Ender: String, CaseIterable, Sendable {
        case cancel, timeout
    }

    static func api(cached: Bool, timeout: TimeInterval, retries: Int = 0, delegate: (any APIDelegate)? = nil, plugins: [any Plugin]) -> AbstractAPI {
        let policy = retries > 0 ? RetryPolicy(maxRetries: retries, baseDelay: 0.01, jitter: false) : .never
        let api = AbstractAPI(configuration: APIConfiguration(timeout: timeout, retryPolicy: policy, plugins: plugins, cache: cached ? HTTPCache() : nil),
                              transport: TestTransport.make(), responseQueue: .global())
        api.delegate = delegate
        return api
    }

    /// Ends `promise` as `ender` says once `ready` holds: a cancel, or nothing (its timeout ends it).
    static func end(_ promise: Promise<Response>, by ender: Ender, when ready: @escaping @Sendable () -> Bool) async {
        guard ender == .cancel else { return }
        _ = await eventually(ready)
        try? await Task.sleep(for: .milliseconds(200))
        promise.cancel()
    }

    /// Every answer a `503` asking to be retried in 2 s. Cancelled during the backoff, the
    /// request settles with `cancelled`, once: plugins hear the attempt's `503`, the retry
    /// announced, and the failure; the retry is never sent, and the backoff's timer changes
    /// nothing when its time comes. With a 1 s timeout, a retry that could only begin after the
    /// deadline is not waited for: the `503` fails it at once, and nothing more is sent.
    @Test(arguments: [false, true], Ender.allCases) func anEndDuringABackoffSendsNoRetry(cached: Bool, ender: Ender) async throws {
        let count = Seam.Counter()
        let server = try Seam.server(count: count) { _, _ in
            RawServer.Connection.response("busy", status: "503 Service Unavailable", headers: "Retry-After: 2\r\n")
        }
        defer { server.stop() }
        let log = Seam.Log()
        let api = Self.api(cached: cached, timeout: ender == .timeout ? 1 : 30, retries: 2, plugins: [log])
        let promise: Promise<Response> = api.request(route: .get(server.baseURL + "/busy"))
        await Self.end(promise, by: ender) { log.events.items.contains { if case .didRetry = $0 { true } else { false } } }
        let result = await promise.result
        let expected = ender == .cancel ? "cancelled" : "unacceptableStatus 503"
        #expect(Pass.outcome(result) == expected, "\(result)")
        // Past the backoff's end.
        try await Task.sleep(for: .seconds(3))
        #expect(count.value == 1, "sent \(count.value) times")
        #expect(log.sends.count == 1 && log.answers.map { Pass.outcome($0) } == ["503 busy"], "\(log.events.items)")
        let retries = log.events.items.filter { if case .didRetry = $0 { true } else { false } }.count
        let failures = log.events.items.compactMap { if case .didFail(let error, _) = $0 { Pass.name(error) } else { nil } }
        #expect(retries == (ender == .cancel ? 1 : 0) && failures == [expected], "\(log.events.items)")
    }

    /// Refreshes the credentials in 3 s, counting its refreshes, signing with the generation.
    final class SlowRefresh: APIDelegate, @unchecked Sendable {
        let refreshes = Seam.Counter()
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer \(refreshes.value)", forHTTPHeaderField: "Authorization")
        }
        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            Promise(in: .global()) { [refreshes] in
                try await Task.sleep(for: .seconds(3))
                _ = refreshes.next()
            }
        }
    }

    /// A `401` whose refresh takes 3 s, the request ended meanwhile by a cancel or its 1 s
    /// timeout: it settles with `cancelled` or `timeout`, once; the refresh ends (done, or
    /// failed by the API's timeout, which bounds it too), once, and the request is not replayed.
    @Test(arguments: [false, true], Ender.allCases) func anEndDuringARefreshWaitReplaysNothing(cached: Bool, ender: Ender) async throws {
        let count = Seam.Counter()
        let server = try Seam.server(count: count) { request, _ in
            request.contains("Bearer 0") ? RawServer.Connection.response("who?", status: "401 Unauthorized") : RawServer.Connection.response("yes")
        }
        defer { server.stop() }
        let log = Seam.Log()
        let delegate = SlowRefresh()
        let api = Self.api(cached: cached, timeout: ender == .timeout ? 1 : 30, delegate: delegate, plugins: [log])
        let promise: Promise<Response> = api.request(route: .get(server.baseURL + "/me"))
        await Self.end(promise, by: ender) { count.value == 1 }
        let result = await promise.result
        #expect(Pass.outcome(result) == (ender == .cancel ? "cancelled" : "timeout"), "\(result)")
        let refreshed = { @Sendable in log.events.items.filter { if case .didRefresh = $0 { true } else { false } }.count }
        #expect(await eventually { refreshed() == 1 }, "\(log.events.items)")
        // Past the refresh's 3 s.
        try await Task.sleep(for: .seconds(ender == .cancel ? 1 : 3))
        #expect(refreshed() == 1 && delegate.refreshes.value == (ender == .cancel ? 1 : 0), "\(log.events.items)")
        #expect(count.value == 1, "sent \(count.value) times")
        #expect(log.sends.count == 1 && log.answers.count == 1, "\(log.events.items)")
    }

    /// A redirect that the server answers only once the request has ended (a cancel, or its 1 s
    /// timeout): the request settles with `cancelled` or `timeout`, and the redirect's target is
    /// never asked for.
    @Test(arguments: [false, true], Ender.allCases) func aRedirectAnsweredAfterTheEndIsNotFollowed(cached: Bool, ender: Ender) async throws {
        let count = Seam.Counter()
        let ended = DispatchSemaphore(value: 0)
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                _ = count.next()
                if request.hasPrefix("GET /next") {
                    guard connection.send(RawServer.Connection.response("moved here")) else { return }
                    continue
                }
                _ = ended.wait(timeout: .now() + 30)
                guard connection.send("HTTP/1.1 302 Found\r\nLocation: /next\r\nContent-Length: 0\r\n\r\n") else { return }
            }
        }
        defer { server.stop() }
        let log = Seam.Log()
        let api = Self.api(cached: cached, timeout: ender == .timeout ? 1 : 30, plugins: [log])
        let promise: Promise<Response> = api.request(route: .get(server.baseURL + "/old"))
        await Self.end(promise, by: ender) { count.value == 1 }
        let result = await promise.result
        ended.signal()
        #expect(Pass.outcome(result) == (ender == .cancel ? "cancelled" : "timeout"), "\(result)")
        try await Task.sleep(for: .seconds(1))
        #expect(count.value == 1, "sent \(count.value) times")
        #expect(log.sends.count == 1 && log.answers.count == 1, "\(log.events.items)")
    }

    /// Hands every exchange to `base`, noting those of requests (named by their `X-N` field)
    /// that had already settled, and whether their task is cancelled.
    final class SendsAfterTheEnd: Transport {
        let base: any Transport
        let settled = Recorder<String>()
        let late = Recorder<LateTask>()

        init(base: any Transport) {
            self.base = base
        }

        func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
            let name = request.urlRequest.value(forHTTPHeaderField: "X-N") ?? "?"
            let task = base.send(request, to: receiver)
            guard settled.items.contains(name) else { return task }
            let watched = LateTask(name: name, task: task)
            late.append(watched)
            return watched
        }

        /// The task of an attempt handed over after its request settled.
        final class LateTask: TransportTask {
            let name: String
            let task: any TransportTask
            let cancels = Recorder<Bool>()
            init(name: String, task: any TransportTask) {
                self.name = name
                self.task = task
            }
            func cancel() {
                cancels.append(true)
                task.cancel()
            }
            func resumeReceiving() { task.resumeReceiving() }
        }
    }

    /// Forty requests, each answered `503` with `Retry-After: 0` (a backoff of nothing) up to
    /// its last retry, each cancelled after a different short while: wherever the cancel lands
    /// (an attempt on the wire, its answer evaluated, the backoff's wait scheduled or firing),
    /// each settles once, with `cancelled` or, its retries spent, the `503`; plugins hear each
    /// fail once, and every attempt sent answered once. An attempt the pipeline began to send
    /// just as its request settled (its `.send` taken by the state machine, the cancel landing
    /// before the transport got it) has its task cancelled at once; no other reaches the
    /// transport after its request settled. (The server may still read, after they settled,
    /// requests handed to the transport before: a transport's cancel races what it has begun to
    /// send.)
    @Test(arguments: [false, true]) func cancelsLandingAnywhereInRetriesSettleOnceAndSendNothingAfter(cached: Bool) async throws {
        let server = try Seam.server(count: Seam.Counter()) { _, _ in
            RawServer.Connection.response("busy", status: "503 Service Unavailable", headers: "Retry-After: 0\r\n")
        }
        defer { server.stop() }
        let log = Seam.Log()
        let transport = SendsAfterTheEnd(base: TestTransport.make() ?? URLSessionTransport())
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: RetryPolicy(maxRetries: 3, baseDelay: 0.01, jitter: false),
                                                              plugins: [log], cache: cached ? HTTPCache() : nil),
                              transport: transport, responseQueue: .global())
        let promises: [Promise<Response>] = (0..<40).map {
            api.request(route: .get(server.baseURL + "/busy"), options: RequestOptions(headers: ["X-N": "\($0)"]))
        }
        for (index, promise) in promises.enumerated() {
            promise.onResult(in: .global()) { _ in transport.settled.append("\(index)") }
            DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(index * 250)) { promise.cancel() }
        }
        var outcomes: [String: Int] = [:]
        for promise in promises { outcomes[Pass.outcome(await promise.result), default: 0] += 1 }
        #expect(Set(outcomes.keys).isSubset(of: ["cancelled", "unacceptableStatus 503"]), "\(outcomes)")
        let failures = { @Sendable in log.events.items.filter { if case .didFail = $0 { true } else { false } }.count }
        #expect(await eventually { failures() == 40 } && failures() == 40, "\(failures()) failures: \(outcomes)")
        try await Task.sleep(for: .seconds(1))
        let uncancelled = transport.late.items.filter { $0.cancels.items.isEmpty }.map(\.name)
        #expect(uncancelled.isEmpty, "sent after settling, and left running: \(uncancelled)")
        #expect(failures() == 40)
        // Every attempt sent was answered once, and at most four a request.
        #expect(log.sends.count == log.answers.count && log.sends.count <= 160, "\(log.sends.count) sent, \(log.answers.count) answered")
    }
}
