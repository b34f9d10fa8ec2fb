import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The request's machine after its end: a cancel, the timeout or the answer, racing one another
/// against real servers on the transport under test (`TERN_TEST_TRANSPORT`), at every stage (on
/// the wire, in a retry's backoff, waiting for credentials, between a redirect's hops, while the
/// app's code judges a stream's head, writing a download). Each promise settles exactly once,
/// with its value or a typed APIError; the API and its transport are let go.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct AfterTheEndRaceTests: EarlyAnswerAttack {
    final class WeakTransport: @unchecked Sendable {
        weak var transport: (any Transport & AnyObject)?
    }

    /// Runs `body` with an API of `configuration` over a new transport of the kind under test,
    /// then checks that both are let go.
    static func racing(_ configuration: APIConfiguration, delegate: (any APIDelegate)? = nil, clock: (any APIClock)? = nil,
                       sourceLocation: SourceLocation = #_sourceLocation, _ body: (AbstractAPI) async throws -> Void) async throws {
        let apiGone: WeakRef<AbstractAPI>
        let transportGone = WeakTransport()
        do {
            let transport = try #require(TestTransport.make() as? any Transport & AnyObject, sourceLocation: sourceLocation)
            let api = AbstractAPI(configuration: configuration, transport: transport, responseQueue: .global(), clock: clock)
            api.delegate = delegate
            apiGone = WeakRef(api)
            transportGone.transport = transport
            try await body(api)
        }
        #expect(await eventually(timeout: 10) { apiGone.isFreed }, "the API outlived its requests", sourceLocation: sourceLocation)
        #expect(await eventually(timeout: 10) { transportGone.transport == nil }, "the transport outlived its API", sourceLocation: sourceLocation)
    }

    /// Whether `results` is one value `expected` or one typed error among `allowed` case names.
    static func expectOnce<Value: Sendable & Equatable>(_ results: [Result<Value, any Error>], is expected: Value, or allowed: Set<String>,
                                                        sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(results.count == 1, "settled \(results.count) times", sourceLocation: sourceLocation)
        switch results.first {
        case .success(let value)?: #expect(value == expected, sourceLocation: sourceLocation)
        case .failure(let error as APIError)?: #expect(allowed.contains(error.caseName), "\(error)", sourceLocation: sourceLocation)
        case .failure(let error)?: Issue.record("untyped: \(error)", sourceLocation: sourceLocation)
        case nil: break
        }
    }

    /// A cancel racing an answer that comes at once: 40 requests, each cancelled a little
    /// later than the one before.
    @Test func aCancelRacingTheAnswer() async throws {
        let server = try LoopbackServer { _ in .text("ok") }
        defer { server.stop() }
        try await Self.racing(APIConfiguration(timeout: 10, retryPolicy: .never)) { api in
            var promises: [Promise<String>] = []
            for index in 0..<40 {
                let promise: Promise<String> = api.request(route: .get(server.baseURL + "/race"))
                usleep(useconds_t(index * 50))
                promise.cancel()
                promises.append(promise)
            }
            for promise in promises {
                Self.expectOnce(await Self.results(of: promise), is: "ok", or: ["cancelled"])
            }
        }
    }

    /// The timeout racing an answer that comes about when it fires.
    @Test func theTimeoutRacingTheAnswer() async throws {
        let server = try LoopbackServer { request in
            ServerResponse.text("ok").with(.delayed(Double(request.path.dropFirst().count % 5) * 0.02 + 0.05))
        }
        defer { server.stop() }
        try await Self.racing(APIConfiguration(timeout: 0.1, retryPolicy: .never)) { api in
            let promises: [Promise<String>] = (0..<20).map { index in
                api.request(route: .get(server.baseURL + "/" + String(repeating: "x", count: index)))
            }
            for promise in promises {
                Self.expectOnce(await Self.results(of: promise), is: "ok", or: ["timeout"])
            }
        }
    }

    /// An answer that comes after the timeout ended the request, on the same connection the
    /// next request then uses: the late answer is nobody's, and the next request gets its own.
    @Test func aLateAnswerAfterTheTimeoutIsNobodys() async throws {
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                if request.hasPrefix("GET /slow") {
                    connection.pause(1_300)
                    guard connection.send(RawServer.Connection.response("late")) else { return }
                } else {
                    connection.send(RawServer.Connection.response("next"))
                }
            }
        }
        defer { server.stop() }
        // The slow request's timeout is 1 s; the next one's, time enough however busy the machine.
        try await Self.racing(APIConfiguration(timeout: 10, retryPolicy: .never)) { api in
            let slow = await Self.results(of: api.request(route: .get(server.baseURL + "/slow"), options: RequestOptions(timeout: 1)) as Promise<String>)
            Self.expectOnce(slow, is: "never", or: ["timeout"])
            Self.expectOnce(await Self.results(of: api.request(route: .get(server.baseURL + "/next")) as Promise<String>), is: "next", or: [])
        }
    }

    /// An answer after the deadline when the timer has not run yet, as on a machine too busy
    /// (or suspended) to run it on time: here a clock whose timers never fire. The answer is late
    /// all the same.
    @Test(arguments: [false, true])
    func anAnswerAfterTheDeadlineIsLateWhenTheTimerIsLater(streamed: Bool) async throws {
        struct StalledTimers: APIClock {
            struct Never: Cancellable { func cancel() {} }
            var now: TimeInterval { SystemClock.shared.now }
            func schedule(after delay: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any Cancellable { Never() }
        }
        let server = try LoopbackServer { _ in ServerResponse.text("late").with(.delayed(0.4)) }
        defer { server.stop() }
        try await Self.racing(APIConfiguration(timeout: 0.2, retryPolicy: .never), clock: StalledTimers()) { api in
            guard streamed else {
                let late = await Self.results(of: api.request(route: .get(server.baseURL + "/late")) as Promise<String>)
                return Self.expectOnce(late, is: "never", or: ["timeout"])
            }
            let lines = Task.onTestThreads { () async -> Result<[String], any Error> in
                do {
                    return .success(try await api.stream(route: .get(server.baseURL + "/late")).lines.reduce(into: []) { $0.append($1) })
                } catch {
                    return .failure(error)
                }
            }
            Self.expectOnce([await lines.value], is: ["never"], or: ["timeout"])
        }
    }

    /// A cancel while a retry waits out its backoff (on a test clock, which then passes it): no
    /// further attempt goes out.
    @Test func aCancelDuringTheBackoff() async throws {
        let attempts = Recorder<Int>()
        let server = try LoopbackServer { _ in
            attempts.append(1)
            return .text("busy", status: 503)
        }
        defer { server.stop() }
        let clock = TestClock()
        let retry = RetryPolicy(maxRetries: 3, baseDelay: 0.5, jitter: false)
        try await Self.racing(APIConfiguration(timeout: 10, retryPolicy: retry), clock: clock) { api in
            let promise: Promise<String> = api.request(route: .get(server.baseURL + "/busy"))
            // The timeout's timer, then the backoff's.
            #expect(await clock.waitForScheduled(2))
            #expect(attempts.items.count == 1)
            promise.cancel()
            Self.expectOnce(await Self.results(of: promise), is: "never", or: ["cancelled"])
            clock.advance(by: 5)
            try await Task.sleep(nanoseconds: 200_000_000)
            #expect(attempts.items.count == 1, "attempted again after the cancel")
        }
    }

    /// A cancel while the request waits for the delegate's refresh, which settles afterwards.
    @Test func aCancelWhileWaitingForCredentials() async throws {
        final class Refresher: APIDelegate, @unchecked Sendable {
            func api(_ api: AbstractAPI, willSend request: inout URLRequest) {}
            let held = Recorder<Promise<Void>.Resolver>()
            func api(_ api: AbstractAPI, needsRefreshBeforeSending request: URLRequest) -> Bool { held.items.isEmpty }
            func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
                let (promise, resolver) = Promise<Void>.pending(in: .global())
                held.append(resolver)
                return promise
            }
        }
        let received = Recorder<Int>()
        let server = try LoopbackServer { _ in
            received.append(1)
            return .text("ok")
        }
        defer { server.stop() }
        let refresher = Refresher()
        try await Self.racing(APIConfiguration(timeout: 10, retryPolicy: .never), delegate: refresher) { api in
            let promise: Promise<String> = api.request(route: .get(server.baseURL + "/signed"))
            #expect(await eventually { !refresher.held.items.isEmpty })
            promise.cancel()
            refresher.held.items.first?.fulfill(())
            Self.expectOnce(await Self.results(of: promise), is: "never", or: ["cancelled"])
            try await Task.sleep(nanoseconds: 100_000_000)
            #expect(received.items.isEmpty, "sent after the cancel")
        }
    }

    /// A cancel between a redirect's hops, the second one slow.
    @Test func aCancelBetweenARedirectsHops() async throws {
        let hops = Recorder<String>()
        let server = try LoopbackServer { request in
            hops.append(request.path)
            return request.path == "/first" ? ServerResponse(status: 307, headers: ["Location": "/second"])
                                            : ServerResponse.text("ok").with(.stall(5))
        }
        defer { server.stop() }
        // A timeout that outlasts a machine's stall (CI once stood still for about 20 s between
        // the hops): the cancel, not the timeout, ends the request.
        try await Self.racing(APIConfiguration(timeout: 40, retryPolicy: .never)) { api in
            let promise: Promise<String> = api.request(route: .get(server.baseURL + "/first"))
            #expect(await eventually { hops.items.count == 2 })
            promise.cancel()
            Self.expectOnce(await Self.results(of: promise), is: "never", or: ["cancelled"])
            #expect(await eventually { server.openConnections == 0 }, "the second hop's connection stayed open")
        }
    }

    /// A cancel or the timeout while the app's code judges a stream's head, the body and its
    /// end arriving meanwhile: the reader ends typed, once.
    @Test(arguments: [false, true])
    func anEndWhileTheHeadIsJudged(byTimeout: Bool) async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\na\nb\n")
            _ = connection.readAvailable(for: 3)
        }
        defer { server.stop() }
        let judging = Recorder<Int>()
        let slow = Validation.custom { _ in
            judging.append(1)
            usleep(1_500_000)
            judging.append(2)
            return true
        }
        // The cancel's request has time enough for its head to come and be judged, however busy
        // the machine: the cancel, not the timeout, ends it.
        try await Self.racing(APIConfiguration(timeout: byTimeout ? 1 : 10, validation: slow, retryPolicy: .never)) { api in
            let stream = api.stream(route: .get(server.baseURL + "/judged"))
            let reader = Task.onTestThreads { () async throws -> [String] in
                var lines: [String] = []
                for try await line in stream.lines { lines.append(line) }
                return lines
            }
            // Whether the cancel came while the head was still judged: a test thread held back
            // past the judging (seen once in a whole run) cancels a stream that has ended.
            var judged = false
            if !byTimeout {
                #expect(await eventually { !judging.items.isEmpty })
                judged = judging.items.contains(2)
                stream.cancel()
            }
            let ended = try await Self.within { await reader.result }
            switch ended {
            case .failure(let error as APIError)?: #expect(error.caseName == (byTimeout ? "timeout" : "cancelled"), "\(error)")
            case .success(let lines)? where judged: #expect(lines == ["a", "b"])
            case let other: Issue.record("\(String(describing: other))")
            }
        }
    }

    /// A cancel while a download writes its file: it settles cancelled, and leaves no file. The
    /// server holds the rest until the client lets go (a stall of 5 s once ended first under a
    /// whole run's load, and the download failed cut short instead of cancelled).
    @Test func aCancelWhileTheDownloadWrites() async throws {
        let server = try LoopbackServer { _ in
            ServerResponse(body: patterned(bytes: 1 << 20)).with(.stalled(afterBytes: 300_000, seconds: 45))
        }
        defer { server.stop() }
        try await Self.racing(APIConfiguration(timeout: 45, retryPolicy: .never)) { api in
            try await Self.inDirectory { directory in
                let destination = directory.appendingPathComponent("file")
                let promise = api.download(route: .get(server.baseURL + "/file"), to: destination)
                let progressed = Recorder<Int64>()
                _ = promise.onProgress(in: .global()) { progressed.append($0.completedBytes) }
                #expect(await eventually { (progressed.items.last ?? 0) > 0 })
                promise.cancel()
                let results = await Self.results(of: promise)
                #expect(results.count == 1)
                guard case .failure(APIError.cancelled)? = results.first else {
                    Issue.record("\(String(describing: results.first))")
                    return
                }
                #expect(!FileManager.default.fileExists(atPath: destination.path))
            }
        }
    }
}
