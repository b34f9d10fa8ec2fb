#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation
import Testing
import Tern
import TernTesting

/// The waits for a descriptor (a request libcurl could make no socket for waits for another of
/// its transport to end, libcurl's connections limited meanwhile to as many as run), against the
/// features around them, in a child process whose descriptors below Tern's reserve are all
/// taken once a request the server answers late holds its socket: what comes after finds none.
/// - A request whose timeout runs out while it waits times out, once, and is never sent; a POST
///   that waits, its retry policy allowing POSTs, is sent once when the held one ends.
/// - Requests cancelled while they wait are cancelled, each once; and the limit goes with them:
///   requests after them, descriptors free again, run at once while the held one still runs.
/// (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads) struct DescriptorWaitAttackTests {
    /// What the server (in the parent) has seen, and how many `/c/` requests it held at once
    /// while it held `/hold`.
    final class Seen: @unchecked Sendable {
        /// The paths that came while `/hold` was held.
        let cameWhileHeld = Recorder<String>()
        private let lock = NSLock()
        private var storage: (paths: [String], inFlight: Int, peakWhileHeld: Int, holding: Bool, done: Int) = ([], 0, 0, false, 0)

        func with<T>(_ body: (inout (paths: [String], inFlight: Int, peakWhileHeld: Int, holding: Bool, done: Int)) -> T) -> T {
            lock.lock()
            defer { lock.unlock() }
            return body(&storage)
        }

        /// Waits up to `seconds` for `condition`; returns whether it came.
        func wait(seconds: Double, for condition: (inout (paths: [String], inFlight: Int, peakWhileHeld: Int, holding: Bool, done: Int)) -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if with(condition) { return true }
                usleep(5_000)
            }
            return with(condition)
        }
    }

    /// `/hold`: answered once `cCount` `/c/` requests were, or a file is at `releasedBy` (at most
    /// `holdSeconds`); `/c/N`: held
    /// until `cCount` are in at once (at most 2 s), then answered; `/s/N`: a stream of one line,
    /// its connection closed (`/s/held`: the line after `holdSeconds`); anything else (`/warm` closing its connection): answered at once,
    /// naming itself.
    static func server(seen: Seen, holdSeconds: Double, cCount: Int, releasedBy: String? = nil) throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let line = request.prefix { $0 != "\r" }
                let path = line.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
                if seen.with({ $0.paths.append("\(line.split(separator: " ").first ?? "?") \(path)"); return $0.holding }) {
                    seen.cameWhileHeld.append(path)
                }
                if path == "/hold" {
                    seen.with { $0.holding = true }
                    _ = seen.wait(seconds: holdSeconds) {
                        $0.done >= cCount && cCount > 0 || releasedBy.map { FileManager.default.fileExists(atPath: $0) } ?? false
                    }
                    seen.with { $0.holding = false }
                    guard connection.send(RawServer.Connection.response("plain \(path)")) else { return }
                } else if path.hasPrefix("/c/") {
                    seen.with {
                        $0.inFlight += 1
                        if $0.holding { $0.peakWhileHeld = max($0.peakWhileHeld, $0.inFlight) }
                    }
                    _ = seen.wait(seconds: 2) { $0.inFlight >= cCount }
                    seen.with { $0.inFlight -= 1; $0.done += 1 }
                    guard connection.send(RawServer.Connection.response("plain \(path)")) else { return }
                } else if path.hasPrefix("/s/") {
                    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
                    if path == "/s/held" {
                        guard connection.send(head) else { return }
                        usleep(UInt32(holdSeconds * 1_000_000))
                        _ = connection.send(StreamTests.chunk("\(path) line\n") + "0\r\n\r\n")
                    } else {
                        _ = connection.send(head + StreamTests.chunk("\(path) line\n") + "0\r\n\r\n")
                    }
                    return
                } else if path == "/warm" {
                    _ = connection.send(RawServer.Connection.response("plain \(path)", headers: "Connection: close\r\n"))
                    return
                } else {
                    guard connection.send(RawServer.Connection.response("plain \(path)")) else { return }
                }
            }
        }
    }

    #if os(Linux) && compiler(>=6.3)
    /// Lowers the process's limit to `spare` descriptors past the highest open.
    static func lowerLimit(spare: Int) -> Bool {
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.compactMap { Int($0) } ?? []
        var limit = rlimit(rlim_cur: rlim_t((open.max() ?? 2) + spare + 1), rlim_max: rlim_t((open.max() ?? 2) + spare + 1))
        return setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0
    }

    /// Takes every descriptor below the last `reserve` (16, Tern's sockets'; 8, its files') but
    /// `free`: returns the ones taken.
    static func takeDescriptors(leaving free: Int, reserve: Int = 16) -> [Int32] {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        var taken: [Int32] = []
        while true {
            let descriptor = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0)
            guard descriptor >= 0 else { break }
            if Int(descriptor) + reserve >= Int(limit.rlim_cur) { close(descriptor); break }
            taken.append(descriptor)
        }
        for _ in 0..<free { if let last = taken.popLast() { close(last) } }
        return taken
    }

    /// The sockets the process holds, by inode (`socket:[N]`): a count would miss one socket
    /// closed as another opens.
    static func sockets() -> Set<String> {
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return Set(open.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)") }
            .filter { $0.hasPrefix("socket:") })
    }

    /// The process's limit lowered to `spare`, a request to `/warm`, whose connection is closed
    /// after (what the transport opens once is open by then), every descriptor but four taken,
    /// then a request to `/hold` (or what `holding` starts), which the server answers late; once a socket
    /// not open before is, every descriptor below the reserve taken. Returns what the request to
    /// `/hold` settles with, and the descriptors taken; nil if no new socket opened within 5 s.
    static func hold(_ api: AbstractAPI, base: String, spare: Int,
                     holding: (@Sendable (AbstractAPI) -> Task<String, Never>)? = nil) async -> (Task<String, Never>, [Int32])? {
        guard lowerLimit(spare: spare) else { return nil }
        let warm: Promise<String> = api.request(route: .get(base + "/warm"))
        // A stream too, whose libcurl loop is made at the first.
        guard await outcome(warm, path: "/warm") == "ok", await stream(api, base + "/s/warm") == "ok" else { return nil }
        try? await Task.sleep(for: .milliseconds(100))
        let before = sockets()
        let taken = takeDescriptors(leaving: 4)
        let held = holding?(api) ?? {
            let held: Promise<String> = api.request(route: .get(base + "/hold"))
            return Task.onTestThreads { await outcome(held, path: "/hold") }
        }()
        for _ in 0..<500 where sockets().isSubset(of: before) { try? await Task.sleep(for: .milliseconds(10)) }
        // Without it, what comes next could find the held one ended and its connection free.
        guard !sockets().isSubset(of: before) else { return nil }
        return (held, taken + takeDescriptors(leaving: 0))
    }

    /// A stream's one line read: "ok", or what came instead.
    static func stream(_ api: AbstractAPI, _ url: String) async -> String {
        do {
            var lines: [String] = []
            for try await line in api.stream(route: .get(url)).lines { lines.append(line) }
            return lines == ["\(URL(string: url)?.path ?? "?") line"] ? "ok" : "lines \(lines)"
        } catch let error as APIError {
            // Said in full, as only a failing run prints it.
            return "typed \(error.caseName) (\(error))"
        } catch {
            return "untyped \(error)"
        }
    }

    /// What a promise settled with, and how many times it settled (by a `finally`).
    static func outcome(_ promise: Promise<String>, path: String) async -> String {
        await outcome(promise, expecting: "plain \(path)")
    }

    /// What a promise settled with ("ok" for `expected`), and how many times it settled.
    static func outcome(_ promise: Promise<String>, expecting expected: String) async -> String {
        let settled = Recorder<Int>()
        promise.finally { settled.append(1) }
        let result = await promise.result
        try? await Task.sleep(for: .milliseconds(50))
        let times = settled.items.count == 1 ? "" : " settled \(settled.items.count) times"
        switch result {
        case .success(let body): return (body == expected ? "ok" : "wrong \(body)") + times
        case .failure(let error as APIError): return "typed \(error.caseName)" + times
        case .failure(let error): return "untyped \(error)" + times
        }
    }

    /// Over plain HTTP, and over HTTPS.
    @Test(.exitTest, .enabled(if: TestTransport.isCurl, "the waits are libcurl's: FoundationNetworking's sockets take the reserve Tern's leave"), arguments: [false, true])
    func aRequestWhoseTimeoutRunsOutWhileItWaitsTimesOutOnceAndIsNeverSent(overTLS: Bool) async throws {
        let seen = Seen()
        // Held until the late one has settled: held for a fixed time, a child slowed by a full
        // suite's load made it past the end of the hold, and it was sent.
        let released = FileManager.default.temporaryDirectory.appendingPathComponent("tern-late-settled-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: released) }
        let server = try Self.server(seen: seen, holdSeconds: 20, cCount: 0, releasedBy: released)
        defer { server.stop() }
        let certificates = overTLS ? try TestCertificates() : nil
        let relay = try certificates.map { try TLSRelay(certificates: $0, to: server.port) }
        defer { relay?.stop() }
        let base = relay?.baseURL ?? server.baseURL
        let authority = certificates?.authority.path ?? ""
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = base as String, authority = authority as String, released = released as String] in
                CrashBacktrace.printOnCrash()
                let made: (any Transport)? = authority.isEmpty ? TestTransport.make()
                    : try? CurlTransport(trusting: URL(fileURLWithPath: authority))
                guard let transport = made else { exit(2) }
                let retries = RetryPolicy(maxRetries: 2, baseDelay: 0.05, methods: [.get, .post], jitter: false)
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: retries), transport: transport,
                                      responseQueue: .global())
                guard let (held, taken) = await DescriptorWaitAttackTests.hold(api, base: base, spare: 24) else { exit(3) }
                // Every descriptor is taken now: these wait for the held one to end.
                let late: Promise<String> = api.request(route: .get(base + "/t"), options: RequestOptions(timeout: 0.6))
                let posted: Promise<String> = api.request(route: .post(base + "/p"))
                let lateOutcome = await DescriptorWaitAttackTests.outcome(late, path: "/t")
                taken.forEach { close($0) }
                _ = FileManager.default.createFile(atPath: released, contents: nil)
                print("late: \(lateOutcome)")
                print("posted: \(await DescriptorWaitAttackTests.outcome(posted, path: "/p"))")
                print("held: \(await held.value)")
                // After the held one: nothing more of the late one is sent.
                try? await Task.sleep(for: .milliseconds(300))
                let after: Promise<String> = api.request(route: .get(base + "/after"))
                print("after: \(await DescriptorWaitAttackTests.outcome(after, path: "/after"))")
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map(String.init)
        #expect(lines == ["late: typed timeout", "posted: ok", "held: ok", "after: ok"], "\(printed)")
        // The late one was never sent; the POST once, after the held one.
        #expect(seen.with { $0.paths } == ["GET /warm", "GET /s/warm", "GET /hold", "POST /p", "GET /after"], "\(printed)")
    }

    @Test(.exitTest, .enabled(if: TestTransport.isCurl, "the waits are libcurl's: FoundationNetworking's sockets take the reserve Tern's leave")) func requestsCancelledWhileTheyWaitLeaveNoLimitBehind() async throws {
        let seen = Seen()
        let server = try Self.server(seen: seen, holdSeconds: 6, cCount: 7)
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String] in
                CrashBacktrace.printOnCrash()
                guard let transport = TestTransport.make() else { exit(2) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: transport,
                                      responseQueue: .global())
                guard let (held, taken) = await DescriptorWaitAttackTests.hold(api, base: base, spare: 48) else { exit(3) }
                // Every descriptor is taken: these wait, and are cancelled as they wait (fewer than
                // a host's eight connections: none waits for its origin).
                let waiting: [Promise<String>] = (0..<5).map { api.request(route: .get(base + "/b/\($0)")) }
                try? await Task.sleep(for: .milliseconds(500))
                waiting.forEach { $0.cancel() }
                var cancelled: [String] = []
                for (index, promise) in waiting.enumerated() { cancelled.append(await DescriptorWaitAttackTests.outcome(promise, path: "/b/\(index)")) }
                print("waiting: \(Dictionary(grouping: cancelled, by: { $0 }).mapValues(\.count))")
                // Descriptors free again: seven requests to the host, which may run at once beside
                // the one held.
                taken.forEach { close($0) }
                let after: [Promise<String>] = (0..<7).map { api.request(route: .get(base + "/c/\($0)")) }
                var outcomes: [String] = []
                for (index, promise) in after.enumerated() { outcomes.append(await DescriptorWaitAttackTests.outcome(promise, path: "/c/\(index)")) }
                print("after: \(Dictionary(grouping: outcomes, by: { $0 }).mapValues(\.count))")
                print("held: \(await held.value)")
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map(String.init)
        #expect(lines == ["waiting: [\"typed cancelled\": 5]", "after: [\"ok\": 7]", "held: ok"], "\(printed)")
        #expect(seen.with { $0.paths.filter { $0.hasPrefix("GET /b/") } } == [], "\(printed)")
        // The seven ran at once, the one held still running: no limit was left from the waits.
        #expect(seen.with { $0.peakWhileHeld } == 7, "\(printed)")
    }

    /// A stream that finds no descriptor while a plain request holds the last, and a request
    /// while a stream holds it: streams run on a libcurl loop of their own, which has nothing
    /// running; each waits for the other loop's to end, and that one's connection is closed as it
    /// ends (not kept idle), its descriptor taken by the one waiting.
    @Test(.exitTest, .enabled(if: TestTransport.isCurl, "the waits are libcurl's: FoundationNetworking's sockets take the reserve Tern's leave"), arguments: [false, true])
    func aStreamAndARequestLackingADescriptorWaitForEachOther(streamWaits: Bool) async throws {
        let seen = Seen()
        // Held long enough for a child slowed by a full suite's load to start the one waiting
        // while it runs: held 2 s, two loaded runs saw it end first, its connection then idle in
        // its own loop, which the other loop does not take from (it failed at once).
        let server = try Self.server(seen: seen, holdSeconds: 5, cCount: 0)
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String, streamWaits = streamWaits as Bool] in
                CrashBacktrace.printOnCrash()
                guard let transport = TestTransport.make() else { exit(2) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: .never), transport: transport,
                                      responseQueue: .global())
                if streamWaits {
                    guard let (held, taken) = await DescriptorWaitAttackTests.hold(api, base: base, spare: 24) else { exit(3) }
                    print("waiting: \(await DescriptorWaitAttackTests.stream(api, base + "/s/1"))")
                    taken.forEach { close($0) }
                    print("held: \(await held.value)")
                } else {
                    let holding: @Sendable (AbstractAPI) -> Task<String, Never> = { api in
                        Task.onTestThreads { await DescriptorWaitAttackTests.stream(api, base + "/s/held") }
                    }
                    guard let (held, taken) = await DescriptorWaitAttackTests.hold(api, base: base, spare: 24, holding: holding) else { exit(3) }
                    let waiting: Promise<String> = api.request(route: .get(base + "/r"))
                    print("waiting: \(await DescriptorWaitAttackTests.outcome(waiting, path: "/r"))")
                    taken.forEach { close($0) }
                    print("held: \(await held.value)")
                }
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(printed.split(separator: "\n").map(String.init) == ["waiting: ok", "held: ok"], "\(printed)")
        // The one waiting was sent once, after the one held.
        let held = streamWaits ? "GET /hold" : "GET /s/held"
        #expect(seen.with { $0.paths } == ["GET /warm", "GET /s/warm", held, streamWaits ? "GET /s/1" : "GET /r"], "\(printed)")
    }
    /// A transport made while the process has a single descriptor free: libcurl makes no pair of
    /// sockets for its loop to be woken by, and goes on without one, so that the loop would wake
    /// only as its poll times out, once a second, for the transport's life (ten requests took 9 s,
    /// against 0.2 s). It is refused instead, saying why, and one made once descriptors are free
    /// works.
    @Test(.exitTest, .enabled(if: TestTransport.isCurl, "libcurl's loop")) func aTransportMadeWithNoDescriptorToBeWokenByIsRefused() async throws {
        let server = try Self.server(seen: Seen(), holdSeconds: 0, cCount: 0)
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String] in
                CrashBacktrace.printOnCrash()
                // libcurl loaded, and Dispatch's threads started, while descriptors are free.
                guard DescriptorWaitAttackTests.lowerLimit(spare: 24), let first = try? CurlTransport() else { exit(2) }
                let warm: Promise<String> = AbstractAPI(transport: first, responseQueue: .global()).request(route: .get(base + "/warm"))
                guard await DescriptorWaitAttackTests.outcome(warm, path: "/warm") == "ok" else { exit(3) }
                var taken = DescriptorWaitAttackTests.takeDescriptors(leaving: 0)
                while true {
                    let descriptor = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0)
                    guard descriptor >= 0 else { break }
                    taken.append(descriptor)
                }
                if let last = taken.popLast() { close(last) }   // one free: too few for a pair
                let made = Result { () throws(CurlUnavailable) in try CurlTransport() }
                taken.forEach { close($0) }
                switch made {
                case .success: print("made: a transport")
                case .failure(let error): print("made: refused, \(error.description.contains("woken") ? "saying why" : error.description)")
                }
                guard let after = try? CurlTransport() else { exit(4) }
                let request: Promise<String> = AbstractAPI(transport: after, responseQueue: .global()).request(route: .get(base + "/after"))
                print("after: \(await DescriptorWaitAttackTests.outcome(request, path: "/after"))")
                withExtendedLifetime((first, after)) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(printed.split(separator: "\n").map(String.init) == ["made: refused, saying why", "after: ok"], "\(printed)")
    }
    #endif
}
