#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation
import Testing
import Tern
import TernTesting

/// A host's name looked up while the process has one or two descriptors left, in the reserve
/// Tern's sockets leave: libcurl makes a pair of sockets for each lookup's thread, outside
/// Tern's socket callback, and when it cannot, says "getaddrinfo() thread failed to start"; with
/// two, the lookup itself finds none to read `/etc/hosts` with, and libcurl says "Could not
/// resolve host". Either way the code is that of a name that does not resolve, and such a
/// request was told the host could not be found (a retry policy took it for a DNS fault). It
/// waits for a descriptor as one that could make no socket does, and alone, when the lookup did
/// not start, names the process's limit. One descriptor is left free throughout, for Dispatch.
/// (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads) struct LookupDescriptorAttackTests {
    /// The machine's own name, when it is looked up (through libcurl's threads, unlike
    /// `localhost` or an address) as 127.0.0.1.
    static let loopbackName: String? = {
        var name = [UInt8](repeating: 0, count: 256)
        guard gethostname(&name, name.count - 1) == 0 else { return nil }
        let host = String(decoding: name.prefix { $0 != 0 }, as: UTF8.self)
        var hints = addrinfo()
        hints.ai_family = AF_INET
        var found: UnsafeMutablePointer<addrinfo>?
        guard !host.isEmpty, host != "localhost", getaddrinfo(host, nil, &hints, &found) == 0, let found else { return nil }
        defer { freeaddrinfo(found) }
        guard let address = found.pointee.ai_addr else { return nil }
        let loopback = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr == inet_addr("127.0.0.1") }
        return loopback ? host : nil
    }()

    #if os(Linux) && compiler(>=6.3)
    /// Takes every descriptor the process has left, the reserve's too, but `free`.
    static func takeEveryDescriptor(but free: Int) -> [Int32] {
        var taken: [Int32] = []
        while case let descriptor = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0), descriptor >= 0 { taken.append(descriptor) }
        for _ in 0..<free { if let last = taken.popLast() { close(last) } }
        return taken
    }

    /// What a request's failure was: its case, its `URLError`'s code, and whether it names the
    /// descriptors.
    static func failure(_ promise: Promise<Data>) async -> String {
        switch await promise.result {
        case .success: return "ok"
        case .failure(let error as APIError):
            guard case .transportFailed = error, let cause = error.underlyingError as? URLError else { return "typed \(error.caseName)" }
            let named = cause.localizedDescription.contains("file descriptor") ? ", naming the descriptors" : ""
            return "\(cause.code == .cannotFindHost ? "cannotFindHost" : cause.code == .cannotConnectToHost ? "cannotConnectToHost" : "\(cause.code)")\(named)"
        case .failure(let error): return "untyped \(error)"
        }
    }

    /// Alone, with no other exchange to wait for: it fails, naming the descriptors; once there
    /// are some, a name that does not resolve is told so.
    @Test(.exitTest, .enabled(if: TestTransport.isCurl, "libcurl's lookups")) func aLookupWithNoDescriptorLeftFailsNamingTheLimit() async throws {
        let server = try DescriptorWaitAttackTests.server(seen: DescriptorWaitAttackTests.Seen(), holdSeconds: 0, cCount: 0)
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String] in
                CrashBacktrace.printOnCrash()
                guard DescriptorWaitAttackTests.lowerLimit(spare: 24), let transport = TestTransport.make() else { exit(2) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: .never), transport: transport,
                                      responseQueue: .global())
                let warm: Promise<String> = api.request(route: .get(base + "/warm"))
                guard await DescriptorWaitAttackTests.outcome(warm, path: "/warm") == "ok" else { exit(3) }
                let taken = LookupDescriptorAttackTests.takeEveryDescriptor(but: 1)
                print("none left: \(await LookupDescriptorAttackTests.failure(api.request(route: .get("http://tern-lookup.invalid/x"))))")
                taken.forEach { close($0) }
                print("some left: \(await LookupDescriptorAttackTests.failure(api.request(route: .get("http://tern-lookup.invalid/x"))))")
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(printed.split(separator: "\n").map(String.init) == ["none left: cannotConnectToHost, naming the descriptors", "some left: cannotFindHost"],
                "\(printed)")
    }

    /// A name that does not resolve, while Tern's own sockets fill every descriptor below the
    /// reserve (its 16 free): not short for a lookup, it is told at once that the host cannot
    /// be found, not held until the request beside it ends.
    @Test(.exitTest, .enabled(if: TestTransport.isCurl, "libcurl's lookups")) func aNameThatDoesNotResolveBesideFullSocketsFailsAtOnce() async throws {
        let released = FileManager.default.temporaryDirectory.appendingPathComponent("tern-lookup-released-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: released) }
        let server = try DescriptorWaitAttackTests.server(seen: DescriptorWaitAttackTests.Seen(), holdSeconds: 20, cCount: 0, releasedBy: released)
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String, released = released as String] in
                CrashBacktrace.printOnCrash()
                guard let transport = TestTransport.make() else { exit(2) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: transport,
                                      responseQueue: .global())
                guard let (held, taken) = await DescriptorWaitAttackTests.hold(api, base: base, spare: 24) else { exit(3) }
                let lookup: Promise<Data> = api.request(route: .get("http://tern-lookup.invalid/x"), options: RequestOptions(timeout: 5))
                print("lookup: \(await LookupDescriptorAttackTests.failure(lookup))")
                taken.forEach { close($0) }
                _ = FileManager.default.createFile(atPath: released, contents: nil)
                print("held: \(await held.value)")
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(printed.split(separator: "\n").map(String.init) == ["lookup: cannotFindHost", "held: ok"], "\(printed)")
    }

    /// Beside a request the server holds: it waits for that one to end, and is sent once, after
    /// it, the descriptors free by then.
    @Test(.exitTest, .enabled(if: TestTransport.isCurl, "libcurl's lookups"),
          .enabled(if: loopbackName != nil, "the machine's name must be looked up as 127.0.0.1"), arguments: [1, 2])
    func aLookupWithNoDescriptorLeftWaitsForAnotherRequestToEnd(free: Int) async throws {
        let seen = DescriptorWaitAttackTests.Seen()
        let released = FileManager.default.temporaryDirectory.appendingPathComponent("tern-lookup-released-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: released) }
        let server = try DescriptorWaitAttackTests.server(seen: seen, holdSeconds: 20, cCount: 0, releasedBy: released)
        defer { server.stop() }
        let named = "http://\(Self.loopbackName ?? "?"):\(server.port)"
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String, named = named as String, released = released as String, free = free as Int] in
                CrashBacktrace.printOnCrash()
                guard let transport = TestTransport.make() else { exit(2) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: transport,
                                      responseQueue: .global())
                guard let (held, taken) = await DescriptorWaitAttackTests.hold(api, base: base, spare: 24) else { exit(3) }
                let all = taken + LookupDescriptorAttackTests.takeEveryDescriptor(but: free)
                let waiting: Promise<String> = api.request(route: .get(named + "/r"))
                try? await Task.sleep(for: .milliseconds(500))
                all.forEach { close($0) }
                _ = FileManager.default.createFile(atPath: released, contents: nil)
                print("waiting: \(await DescriptorWaitAttackTests.outcome(waiting, path: "/r"))")
                print("held: \(await held.value)")
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(printed.split(separator: "\n").map(String.init) == ["waiting: ok", "held: ok"], "\(printed)")
        #expect(seen.with { $0.paths } == ["GET /warm", "GET /s/warm", "GET /hold", "GET /r"], "\(printed)")
        // Sent once the held one was answered: it waited (not merely looked up after the
        // descriptors were free again).
        #expect(!seen.cameWhileHeld.items.contains("/r"), "\(printed)")
    }
    #endif
}
