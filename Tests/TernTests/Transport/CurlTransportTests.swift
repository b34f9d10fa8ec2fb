#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if os(Linux)
import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting

/// What is particular to the libcurl transport; everything else runs on it with the whole suite.
@Suite(.onTestThreads) struct CurlTransportTests {
    @Test func aReleasedTransportEndsItsThread() async throws {
        let server = try LoopbackServer { _ in .json("[]") }
        defer { server.stop() }
        /// Weak references to the loops; a loop goes only once its thread has ended.
        final class Loops: @unchecked Sendable {
            private let lock = NSLock()
            private var loops: [() -> CurlLoop?] = []
            func add(_ loop: CurlLoop) { lock.withLock { loops.append { [weak loop] in loop } } }
            var alive: Int { lock.withLock { loops.filter { $0() != nil }.count } }
        }
        let loops = Loops()
        for _ in 0..<20 {
            let transport = try CurlTransport()
            loops.add(transport.loop)
            let api = AbstractAPI(transport: transport, responseQueue: .global())
            let body: Data = try await api.request(route: .get(server.baseURL + "/")).value
            #expect(body == Data("[]".utf8))
        }
        #expect(await eventually { loops.alive == 0 }, "\(loops.alive) of 20 loops still running")
    }

    /// Streams run on a loop of their own, made with the first: it ends with its transport too.
    @Test func aReleasedTransportEndsItsStreamsThreadToo() async throws {
        let server = try LoopbackServer { _ in .json("[]") }
        defer { server.stop() }
        /// A weak reference to the loop, read once the transport is gone.
        final class WeakLoop: @unchecked Sendable {
            weak var loop: CurlLoop?
        }
        let streamLoop = WeakLoop()
        do {
            let transport = try CurlTransport()
            let api = AbstractAPI(transport: transport, responseQueue: .global())
            var body = Data()
            for try await chunk in api.stream(route: .get(server.baseURL + "/")) { body += chunk }
            #expect(body == Data("[]".utf8))
            streamLoop.loop = transport.streamLoop.withLock { $0 }
            #expect(streamLoop.loop != nil && streamLoop.loop !== transport.loop)
        }
        #expect(await eventually { streamLoop.loop == nil }, "the streams' loop still runs")
    }

    @Test func workHandedOverWhileTheLoopRunsJobsRunsWithoutWaitingForItsTimeout() throws {
        // A job handed over while the loop runs another finds the loop awake, and does not wake
        // it: the loop must run it next rather than sleep until its poll times out (a second).
        let transport = try CurlTransport()
        let (running, handedOver, ran) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        // Warm-ups, so that no wakeup sent before the loop first slept is still pending.
        for _ in 0..<2 {
            #expect(transport.runIfIdle { ran.signal() })
            ran.wait()
        }
        #expect(transport.runIfIdle { running.signal(); handedOver.wait() })
        running.wait()
        let start = DispatchTime.now()
        #expect(transport.runIfIdle { ran.signal() })
        handedOver.signal()
        #expect(ran.wait(timeout: start + 0.9) == .success)
    }

    @Test func requestsFarApartAreNotWaitedFor() async throws {
        // The loop waits for a next request only while requests come within that wait of the
        // last answer; these come 20 ms apart, so at most the first answer is waited after, and
        // the loop, not waiting, must not sleep marked awake (the next would not wake it).
        let server = try LoopbackServer { _ in .json("[]") }
        defer { server.stop() }
        let transport = try CurlTransport()
        let api = AbstractAPI(transport: transport, responseQueue: .global())
        for _ in 0..<10 {
            let body: Data = try await api.request(route: .get(server.baseURL + "/")).value
            #expect(body == Data("[]".utf8))
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(transport.loop.lingerCount <= 1)
        #expect(transport.loop.sleepsMarkedAwakeCount == 0)
    }

    /// The same when reporting an answer takes longer than the caller's pause (a busy machine
    /// that sets the loop's thread aside; here a receiver that works after it has resumed the
    /// caller): a request sent during the report is timed from when it began. Timed from its
    /// end, such a request looked as if it came at once, and every answer after it was waited
    /// after (the test above, once, on a loaded machine).
    @Test func aSlowReportDoesNotMakeTheNextRequestLookSoon() async throws {
        final class SlowEnding: TransportReceiver, @unchecked Sendable {
            let ended: CheckedContinuation<Void, Never>
            init(_ ended: CheckedContinuation<Void, Never>) { self.ended = ended }
            func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {}
            func didReceive(_ head: ResponseHead) -> TransferDecision { .proceed }
            func didReceive(_ chunk: Data) -> TransferDecision { .proceed }
            func didComplete(with error: (any Error)?) {
                ended.resume()
                usleep(30_000)
            }
        }
        let server = try LoopbackServer { _ in .text("ok") }
        defer { server.stop() }
        let transport = try CurlTransport()
        let request = TransportRequest(urlRequest: URLRequest(url: try #require(URL(string: server.baseURL + "/"))))
        for _ in 0..<5 {
            await withCheckedContinuation { _ = transport.send(request, to: SlowEnding($0)) }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(transport.loop.lingerCount <= 1)
    }

    /// Whether the loop waits after an answer is judged by the last request's arrival: after the
    /// report, from its end, however long it took (decoding the 873-byte benchmark array makes
    /// it 40 µs and more: timed from its beginning, a caller sending at once looked slow and
    /// the loop stopped waiting for it, 0.76x the floor of a decoded request against 0.87x);
    /// during the report, from its beginning (the test above).
    @Test func aRequestIsTimedFromTheReportsEndUnlessItCameDuringIt() {
        let (began, ended) = (UInt64(1_000_000), UInt64(1_080_000))   // an 80 µs report
        let lingering = CurlLoop.lingering
        #expect(CurlLoop.cameSoon(ended + 30_000, afterReportBegan: began, ended: ended))
        #expect(CurlLoop.cameSoon(ended + lingering, afterReportBegan: began, ended: ended))
        #expect(!CurlLoop.cameSoon(ended + lingering + 1, afterReportBegan: began, ended: ended))
        // During the report: soon only within the wait of its beginning.
        #expect(CurlLoop.cameSoon(began + lingering, afterReportBegan: began, ended: ended))
        #expect(!CurlLoop.cameSoon(began + lingering + 1, afterReportBegan: began, ended: ended))
        #expect(!CurlLoop.cameSoon(began + 20_000_000, afterReportBegan: began, ended: began + 30_000_000))
    }

    // Exit tests that capture values need Swift 6.3.
    #if compiler(>=6.3)
    @Test(.exitTest) func withoutLibcurlTheDefaultIsURLSessionSaidOnce() async throws {
        let server = try LoopbackServer { _ in .text("over URLSession") }
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) { [url = server.baseURL as String] in
                setenv("TERN_LIBCURL", "libtern-no-such-curl.so.4", 1)
                guard case .failure = CurlTransport.libraryVersion else { exit(EXIT_FAILURE) }
                let apis = [AbstractAPI(responseQueue: .global()), AbstractAPI(responseQueue: .global())]
                for api in apis {
                    guard api.transport is URLSessionTransport else { exit(EXIT_FAILURE) }
                    let text: String = try await api.request(route: .get(url)).value
                    guard text == "over URLSession" else { exit(EXIT_FAILURE) }
                }
            }
        }
        let said = child.map { String(decoding: $0.standardErrorContent, as: UTF8.self) } ?? ""
        let lines = said.split(separator: "\n").filter { $0.hasPrefix("Tern:") }
        #expect(lines.count == 1, "\(said)")
        #expect(lines.first?.contains("libcurl is not available: libtern-no-such-curl.so.4") == true, "\(said)")
        #expect(lines.first?.hasSuffix("requests go through URLSessionTransport instead.") == true, "\(said)")
    }

    @Test(.exitTest) func aLibraryThatIsNotLibcurlIsRefusedByName() async throws {
        // zlib: on every system that has libcurl, which links it.
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                setenv("TERN_LIBCURL", "libz.so.1", 1)
                do throws(CurlUnavailable) {
                    _ = try CurlTransport()
                } catch {
                    print(error)
                }
            }
        }
        #expect(child.map { String(decoding: $0.standardOutputContent, as: UTF8.self) } == "libcurl is not available: libz.so.1 has no curl_global_init\n")
    }

    @Test(.exitTest) func theLoopSleepsOnceRequestsStop() async throws {
        // In a child process, whose only busy loop thread is this transport's: after requests
        // sent one after another, for which the loop stays awake a moment after each response,
        // its thread must use next to no CPU. A loop that kept waiting would use most of a core.
        await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success) {
                let server = try LoopbackServer { _ in .json("[]") }
                let transport = try CurlTransport()
                let api = AbstractAPI(transport: transport, responseQueue: .global())
                for _ in 0..<50 {
                    let body: Data = try await api.request(route: .get(server.baseURL + "/")).value
                    guard body == Data("[]".utf8) else { exit(EXIT_FAILURE) }
                }
                try await Task.sleep(for: .milliseconds(100))
                let before = loopThreadsCPUTicks()
                try await Task.sleep(for: .seconds(1))
                let used = loopThreadsCPUTicks() - before
                guard used < 10 else {   // clock ticks: a tenth of a second, at 100 per second
                    print("the loop used \(used) ticks while idle")
                    exit(EXIT_FAILURE)
                }
                guard transport.loop.sleepsMarkedAwakeCount == 0 else { exit(EXIT_FAILURE) }
                server.stop()
            }
        }
    }
    #endif

    /// A server that holds each connection's answers `delay` milliseconds, and counts how many
    /// connections it has open at once.
    final class CountingServer: Sendable {
        final class Counts: Sendable {
            let state = Locked((open: 0, most: 0))
        }

        let server: RawServer
        let counts = Counts()

        init(delay: Int) throws {
            let counts = counts
            server = try RawServer { connection in
                counts.state.withLock { $0.open += 1; $0.most = max($0.most, $0.open) }
                defer { counts.state.withLock { $0.open -= 1 } }
                while connection.readRequest() != nil {
                    // Waits on the socket, so that a client or a stop that hangs up ends the wait.
                    _ = connection.readAvailable(for: Double(delay) / 1000)
                    connection.send(RawServer.Connection.response("ok"))
                }
            }
        }

        var most: Int { counts.state.withLock { $0.most } }
    }

    @Test func connectionsToAHostAreCappedAndTheRestWait() async throws {
        let counting = try CountingServer(delay: 5)
        defer { counting.server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: try CurlTransport(), responseQueue: .global())
        let answers: [String] = try await Promise.all((0..<300).map { _ in api.request(route: .get(counting.server.baseURL + "/")) }, in: .global()).value
        #expect(answers.count == 300 && answers.allSatisfy { $0 == "ok" })
        #expect(counting.most <= CurlTransport.defaultConnectionsPerHost, "\(counting.most) connections at once")
        #expect(counting.most > 1)
    }

    /// Requests to a host whose connections are all busy wait for one of them whatever the
    /// loop does, so they are put in without waking it (a system call, and the other core woken,
    /// per request); each still goes out once a connection frees, none waiting on the loop's sleep.
    @Test func requestsToAHostWhoseConnectionsAreBusyWakeNoOneAndRunInTurn() async throws {
        let gate = DispatchSemaphore(value: 0)
        let held = Locked(0)
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                held.withLock { $0 += 1 }
                gate.wait()
                connection.send(RawServer.Connection.response("ok"))
            }
        }
        defer { server.stop() }
        let transport = try CurlTransport(maximumConnectionsPerHost: 2)
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 120, retryPolicy: .never), transport: transport, responseQueue: .global())
        let first: [Promise<String>] = (0..<2).map { _ in api.request(route: .get(server.baseURL + "/")) }
        let origin = try #require(URL(string: server.baseURL)?.admissionOrigin)
        #expect(await eventually { held.withLock { $0 } == 2 && transport.loop.originsFullAtSleep.contains(origin) })
        let wakeups = transport.loop.startWakeupCount
        let rest: [Promise<String>] = (0..<20).map { _ in api.request(route: .get(server.baseURL + "/")) }
        #expect(await eventually { transport.loop.inFlightCount == 22 })
        #expect(transport.loop.startWakeupCount == wakeups)
        for _ in 0..<22 { gate.signal() }
        let answers = try await Promise.all(first + rest, in: .global()).value
        #expect(answers == Array(repeating: "ok", count: 22))
    }

    @Test func aRequestWaitingForAConnectionTimesOutOnTime() async throws {
        // Held far longer than any run of the suite takes, sanitized or not.
        let counting = try CountingServer(delay: 600_000)
        defer { counting.server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 1200, retryPolicy: .never),
                              transport: try CurlTransport(maximumConnectionsPerHost: 2),
                              responseQueue: .global())
        let busy: [Promise<String>] = (0..<2).map { _ in api.request(route: .get(counting.server.baseURL + "/")) }
        defer { busy.forEach { $0.cancel() } }
        #expect(await eventually { counting.most == 2 })
        let waiting: Promise<String> = api.request(route: .get(counting.server.baseURL + "/"), options: RequestOptions(timeout: 0.3))
        guard case .timeout? = await apiError(of: waiting) else {
            Issue.record("expected a timeout")
            return
        }
        // It did not wait for a connection to free up: the two it waited behind are still held.
        #expect(busy.allSatisfy { $0.isPending })
        #expect(counting.most == 2)
    }

    #if compiler(>=6.3)
    /// In a child process limited to 128 descriptors past those it inherited, `count` GETs at
    /// once, the `n`th to `urls[n % urls.count]`, each expected to answer a body containing
    /// `answer`: what it printed, "all ok" or what failed. The transport trusts the authority
    /// at the path `authority`, if given. With `uploading`, each is a POST of a file of that
    /// many bytes instead, as a file body and as a stream of the file in turn. (A parent running
    /// the whole suite hands down other tests' sockets, up to 285 were seen, which a flat limit
    /// of 256 left no room past.)
    static func requestsUnderALowDescriptorLimit(to urls: [String], count: Int, answer: String = "ok",
                                                 authority: String? = nil, uploading: Int? = nil, caching: Bool = false) async -> String {
        // The child prints what failed and exits 0 either way, so that the parent can say what
        // (where it crashed, too: see `CrashBacktrace`).
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [urls, count, answer, authority, uploading, caching] in
                CrashBacktrace.printOnCrash()
                let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-descriptor-limit-\(getpid())")
                try Data(repeating: 7, count: uploading ?? 0).write(to: file)
                defer { try? FileManager.default.removeItem(at: file) }
                let inherited = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.compactMap { Int($0) }.max() ?? 2
                var limit = rlimit(rlim_cur: rlim_t(inherited + 129), rlim_max: rlim_t(inherited + 129))
                guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { exit(2) }
                let transport = try CurlTransport(trusting: authority.map { URL(fileURLWithPath: $0) })
                let cacheDirectory = file.appendingPathExtension("cache")
                defer { try? FileManager.default.removeItem(at: cacheDirectory) }
                let cache = caching ? try HTTPCache(directory: cacheDirectory) : nil
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 120, retryPolicy: .never, cache: cache), transport: transport,
                                      responseQueue: .global())
                // Cached, each its own entry (its own file), then all read from the disk at once.
                var results: [Result<String, any Error>] = []
                for _ in 0..<(caching ? 2 : 1) { results += await withTaskGroup(of: Result<String, any Error>.self) { group in
                    for index in 0..<count {
                        let url = urls[index % urls.count] + (caching ? "/\(index)" : "/")
                        let body: BodyParameters? = uploading.map { size in
                            index.isMultiple(of: 2) ? BodyParameters(file) : BodyParameters(length: Int64(size)) { InputStream(url: file)! }
                        }
                        group.addTask { await (api.request(route: body == nil ? .get(url) : .post(url), parameters: body) as Promise<String>).result }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                } }
                let failures = results.filter { (try? $0.get())?.contains(answer) != true }
                print(failures.isEmpty ? "all ok" : "\(failures.count) of \(count) failed, first: \(failures[0])")
            }
        }
        return String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
    }

    @Test(.exitTest) func twoThousandRequestsAtOnceFitUnderALowDescriptorLimit() async throws {
        let server = try LoopbackServer { _ in .text("ok") }
        defer { server.stop() }
        let printed = await Self.requestsUnderALowDescriptorLimit(to: [server.baseURL], count: 2000)
        #expect(printed == "all ok\n", "\(printed)")
    }

    /// An HTTP cache on disk keeps each answer in a file of its own: 1,000 answers kept at once,
    /// then read back at once, must not run the process out of descriptors.
    @Test(.exitTest) func aThousandAnswersKeptOnDiskAndReadBackFitUnderALowDescriptorLimit() async throws {
        let asked = Locked(0)
        let server = try LoopbackServer { _ in
            asked.withLock { $0 += 1 }
            return ServerResponse(headers: ["Cache-Control": "max-age=600"], body: Data("ok".utf8))
        }
        defer { server.stop() }
        let printed = await Self.requestsUnderALowDescriptorLimit(to: [server.baseURL], count: 1000, caching: true)
        #expect(printed == "all ok\n", "\(printed)")
        // The second round came from the disk.
        #expect(asked.withLock { $0 } == 1000)
    }

    /// A body's file is opened when its bytes are first sent, not when the request is: opened
    /// as it was sent, up to 560 of these failed for want of a descriptor while waiting their
    /// turn for one of the host's 8 connections.
    @Test(.exitTest) func aThousandUploadsFromFilesAtOnceFitUnderALowDescriptorLimit() async throws {
        let server = try LoopbackServer(keepingBodiesUpTo: 0) { request in .text(request.bodyLength == 20_000 ? "ok" : "short") }
        defer { server.stop() }
        let printed = await Self.requestsUnderALowDescriptorLimit(to: [server.baseURL], count: 1000, uploading: 20_000)
        #expect(printed == "all ok\n", "\(printed)")
    }

    /// Each server a host of its own (its port): with no total, 200 connections at once left
    /// 800 requests without a socket, reported as refused connections.
    @Test(.exitTest) func aThousandRequestsToTwoHundredHostsFitUnderALowDescriptorLimit() async throws {
        let servers = try (0..<200).map { _ in try LoopbackServer { _ in .text("ok") } }
        defer { servers.forEach { $0.stop() } }
        let printed = await Self.requestsUnderALowDescriptorLimit(to: servers.map(\.baseURL), count: 1000)
        #expect(printed == "all ok\n", "\(printed)")
    }
    #endif

    #if compiler(>=6.3)
    /// libcurl reports a socket it could not make as a refused connection; the error says the
    /// descriptors ran out.
    @Test(.exitTest) func aSocketThatCannotBeMadeSaysWhy() async throws {
        let (first, second) = (try LoopbackServer { _ in .text("ok") }, try LoopbackServer { _ in .text("ok") })
        defer { first.stop(); second.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [first = first.baseURL as String, second = second.baseURL as String] in
                let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: try CurlTransport(), responseQueue: .global())
                let warm: String = try await api.request(route: .get(first + "/")).value
                // The lowest descriptor free (the one a new descriptor gets): below it every one is
                // taken, so none can be made.
                let free = fcntl(0, F_DUPFD_CLOEXEC, 0)
                close(free)
                var limit = rlimit(rlim_cur: rlim_t(free), rlim_max: rlim_t(free))
                guard warm == "ok", setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { exit(2) }
                print(await (api.request(route: .get(second + "/")) as Promise<String>).result)
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(printed.contains("no file descriptor left") && printed.contains("URLError -1004") && printed.contains("CurlTransport(maximumConnections:)"), "\(printed)")
    }
    #endif

    #if compiler(>=6.3)
    @Test(.exitTest) func fiveHundredAPIsShareOneLoopAndItsConnections() async throws {
        let server = try LoopbackServer { _ in .text("ok") }
        defer { server.stop() }
        // In a process of its own, so that no other test's threads or sockets are counted.
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [url = server.baseURL as String] in
                let descriptors = { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0 }
                let before = descriptors()
                let clients = (0..<500).map { _ in APIClient(configuration: APIConfiguration(baseURL: url), responseQueue: .global()) }
                let answers = await withTaskGroup(of: String?.self) { group in
                    for client in clients { group.addTask { try? await (client.request(route: .get("/")) as Promise<String>).value } }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                try await Task.sleep(for: .milliseconds(200))   // idle
                print("answered \(answers.filter { $0 == "ok" }.count), loops \(loopThreadCount()), descriptors +\(descriptors() - before)")
                withExtendedLifetime(clients) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let numbers = printed.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        #expect(numbers.count == 3, "\(printed)")
        guard numbers.count == 3 else { return }
        #expect(numbers[0] == 500, "\(printed)")
        #expect(numbers[1] == 1, "\(printed)")
        // The loop's own (its multi handle and wakeup) and at most the per-host cap of idle
        // connections: an API each, as before, held two per API and a socket each.
        #expect(numbers[2] <= 4 + CurlTransport.defaultConnectionsPerHost, "\(printed)")
    }
    #endif

    /// A task preferring the transport's executor runs on the loop's thread between requests,
    /// and once the transport is gone its jobs run elsewhere rather than never.
    @Test func aTaskPreferringTheTransportsExecutorRunsOnItsThread() async throws {
        let server = try LoopbackServer { _ in .text("ok") }
        defer { server.stop() }
        var transport: CurlTransport? = try CurlTransport()
        let executor = try #require(transport?.taskExecutor)
        var api: AbstractAPI? = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: transport!, responseQueue: .global())
        let seen = try await withTaskExecutorPreference(executor) { [api] in
            var seen: [(answer: String, thread: String)] = []
            for _ in 0..<3 {
                let answer: String = try await api!.request(route: .get(server.baseURL + "/")).value
                seen.append((answer, currentThreadName()))
            }
            return seen
        }
        #expect(seen.map(\.answer) == ["ok", "ok", "ok"])
        #expect(seen.allSatisfy { $0.thread == CurlLoop.threadName }, "\(seen.map(\.thread))")
        // Released, the transport closes its loop; a job enqueued after that must still run.
        let loop = try #require(transport?.loop)
        (api, transport) = (nil, nil)
        #expect(await eventually { !loop.schedule {} })
        let afterwards = await withTaskExecutorPreference(executor) { currentThreadName() }
        #expect(afterwards != CurlLoop.threadName)
    }

    /// Requests a task on the transport's thread sends while others run are built there: the
    /// busy thread, which declines other callers' work, is where this task runs already.
    @Test(.timeLimit(.minutes(1)))
    func aTaskOnTheTransportsThreadBuildsItsRequestsThereWhileOthersRun() async throws {
        struct Where: RequestParameters {
            let built: Recorder<Bool>
            let loop: CurlLoop
            var headers: HTTPHeaders { [:] }
            func encode(into draft: inout RequestDraft) throws { built.append(loop.isCurrent) }
        }
        let server = try LoopbackServer { _ in Self.late("ok") }
        defer { server.stop() }
        let transport = try CurlTransport()
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: transport, responseQueue: .global())
        let built = Recorder<Bool>()
        let answers = try await withTaskExecutorPreference(transport.taskExecutor) {
            try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<16 {
                    group.addTask {
                        try await api.request(route: .get(server.baseURL + "/"), parameters: Where(built: built, loop: transport.loop)).value
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(answers == Array(repeating: "ok", count: 16))
        #expect(built.items == Array(repeating: true, count: 16))
    }

    /// The transport reports every end on its loop's thread, whatever ended it and however many
    /// run (it knows nothing of what its receiver does then), and tells a receiver asking there
    /// whether other transfers run: the pipeline decides from that where to handle the end.
    @Test(.timeLimit(.minutes(1)))
    func everyEndIsReportedOnTheLoopWhichSaysWhetherOthersRun() async throws {
        final class Ending: TransportReceiver, @unchecked Sendable {
            let transport: CurlTransport
            let ended: CheckedContinuation<TransportCaller, Never>
            init(_ transport: CurlTransport, _ ended: CheckedContinuation<TransportCaller, Never>) { (self.transport, self.ended) = (transport, ended) }
            func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {}
            func didReceive(_ head: ResponseHead) -> TransferDecision { .proceed }
            func didReceive(_ chunk: Data) -> TransferDecision { .proceed }
            func didComplete(with error: (any Error)?) {
                #expect(error == nil)
                ended.resume(returning: transport.caller)
            }
        }
        let server = try LoopbackServer { _ in Self.late("ok") }
        defer { server.stop() }
        let transport = try CurlTransport()
        #expect(transport.caller == .elsewhere)
        let request = TransportRequest(urlRequest: URLRequest(url: try #require(URL(string: server.baseURL + "/"))))
        let alone = await withCheckedContinuation { _ = transport.send(request, to: Ending(transport, $0)) }
        #expect(alone == .loop(alone: true))
        let callers = await withTaskGroup(of: TransportCaller.self) { group in
            for _ in 0..<16 {
                group.addTask { await withCheckedContinuation { _ = transport.send(request, to: Ending(transport, $0)) } }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(callers.count == 16 && callers.allSatisfy { if case .loop = $0 { true } else { false } }, "\(callers)")
        #expect(callers.contains(.loop(alone: false)), "16 sent together overlap: \(callers)")
        // A task that prefers the transport's thread runs there as one of its jobs.
        let inJob = await withTaskExecutorPreference(transport.taskExecutor) { transport.caller }
        #expect(inJob == .job)
    }

    /// A cancel's end is reported on the loop's thread too, at once.
    @Test(.timeLimit(.minutes(1)))
    func aCancelledExchangeEndsOnTheLoop() async throws {
        final class Ending: TransportReceiver, @unchecked Sendable {
            let loop: CurlLoop
            let ended: CheckedContinuation<(onLoop: Bool, error: (any Error)?), Never>
            init(_ loop: CurlLoop, _ ended: CheckedContinuation<(onLoop: Bool, error: (any Error)?), Never>) { (self.loop, self.ended) = (loop, ended) }
            func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {}
            func didReceive(_ head: ResponseHead) -> TransferDecision { .proceed }
            func didReceive(_ chunk: Data) -> TransferDecision { .proceed }
            func didComplete(with error: (any Error)?) { ended.resume(returning: (loop.isCurrent, error)) }
        }
        let arrived = Recorder<Bool>()
        let server = try LoopbackServer { _ in
            arrived.append(true)
            var response = ServerResponse.text("late")
            response.behavior = .delayed(30)
            return response
        }
        defer { server.stop() }
        let transport = try CurlTransport()
        let request = TransportRequest(urlRequest: URLRequest(url: try #require(URL(string: server.baseURL + "/"))))
        let ended = await withCheckedContinuation { continuation in
            let task = transport.send(request, to: Ending(transport.loop, continuation))
            Task.onTestThreads {
                _ = await eventually { !arrived.items.isEmpty }
                task.cancel()
            }
        }
        #expect((ended.error as? URLError)?.code == .cancelled, "\(String(describing: ended.error))")
        #expect(ended.onLoop)
    }

    /// `text` answered after 50 ms, so that requests sent together overlap.
    private static func late(_ text: String) -> ServerResponse {
        var response = ServerResponse.text(text)
        response.behavior = .delayed(0.05)
        return response
    }

    @Test func itIsLinuxsDefault() throws {
        let api = AbstractAPI(responseQueue: .global())
        #expect(api.transport is CurlTransport)
        #expect(try CurlTransport.libraryVersion.get().hasPrefix("libcurl/"))
    }
}

/// The name the system shows for the calling thread.
private func currentThreadName() -> String {
    ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
}

/// How many of this process's threads are libcurl loops.
private func loopThreadCount() -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter { task in
        (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.hasPrefix(CurlLoop.threadName) == true
    }.count
}

/// The user and system CPU time, in clock ticks, of this process's threads named as libcurl loops.
private func loopThreadsCPUTicks() -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.reduce(0) { total, task in
        guard let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
              let nameEnd = stat.lastIndex(of: ")"), stat.contains("(\(CurlLoop.threadName))") else { return total }
        // After the name: state, then ten fields, then user and system time.
        let fields = stat[stat.index(after: nameEnd)...].split(separator: " ")
        return total + (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }
}
#endif
