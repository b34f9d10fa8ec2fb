#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation
import Testing
@testable import Tern
import TernTesting

/// What Tern writes to files besides bodies, while the process has no descriptor left: a cookie
/// jar's file, a recording's. In a child process whose limit is lowered to 48 spare, a request
/// whose connection is then kept idle, every descriptor taken, and a second request sent over
/// that connection (no socket needed); descriptors free again, a third.
/// - A recording: each request settles once, with its answer or a typed error; the file, read
///   after, holds each exchange whole (one that could not be written then, written with the next).
/// - A cookie jar: the cookie set while no descriptor was free is in the file once one is (its
///   write tried again at the next request), for the next launch; before, its write failed and
///   was never tried again.
/// (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads) struct DescriptorPersistenceAttackTests {
    /// `/set/N` sets the cookie `cN=vN` for an hour; anything else answers with its path.
    static func server() throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let path = request.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
                let name = path.split(separator: "/").last.map(String.init) ?? "?"
                let cookie = path.hasPrefix("/set/") ? "Set-Cookie: c\(name)=v\(name); Max-Age=3600; Path=/\r\n" : ""
                guard connection.send(RawServer.Connection.response("plain \(path)", headers: cookie)) else { return }
            }
        }
    }

    #if os(Linux) && compiler(>=6.3)
    /// Takes every descriptor the process has free; returns them.
    static func takeAll() -> [Int32] {
        var taken: [Int32] = []
        while true {
            let descriptor = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0)
            guard descriptor >= 0 else { return taken }
            taken.append(descriptor)
        }
    }

    @Test(.exitTest) func aCookieSetWhileNoDescriptorIsFreeIsSavedOnceOneIs() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String] in
                CrashBacktrace.printOnCrash()
                let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-descriptor-cookies-\(getpid()).json")
                defer { try? FileManager.default.removeItem(at: file) }
                let jar = CookieJar(file: file)
                guard DescriptorWaitAttackTests.lowerLimit(spare: 48), let transport = TestTransport.make() else { exit(2) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: .never, cookies: .shared(jar)),
                                      transport: transport, responseQueue: .global())
                func run(_ path: String) async -> String {
                    await DescriptorCacheAttackTests.outcome(api.request(route: .get(base + path)), expected: "plain \(path)")
                }
                print("first: \(await run("/set/1"))")
                jar.waitForWrites()
                let taken = DescriptorPersistenceAttackTests.takeAll()
                let second = await run("/set/2")
                jar.waitForWrites()
                taken.forEach { close($0) }
                print("second: \(second)")
                print("third: \(await run("/plain"))")
                jar.waitForWrites()
                print("in the jar: \(jar.all.map { "\($0.name)=\($0.value)" }.sorted())")
                print("in the file: \(CookieJar(file: file).all.map { "\($0.name)=\($0.value)" }.sorted())")
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map(String.init)
        #expect(lines.prefix(4) == ["first: ok", "second: ok", "third: ok", "in the jar: [\"c1=v1\", \"c2=v2\"]"], "\(printed)")
        // Before, the write that found no descriptor was never tried again: the file kept c1 alone.
        #expect(lines.dropFirst(4) == ["in the file: [\"c1=v1\", \"c2=v2\"]"], "\(printed)")
    }

    @Test(.exitTest) func aRecordingWrittenWhileNoDescriptorIsFreeHoldsEveryExchangeOnceOneIs() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String] in
                CrashBacktrace.printOnCrash()
                let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-descriptor-recording-\(getpid()).har")
                defer { try? FileManager.default.removeItem(at: file) }
                guard DescriptorWaitAttackTests.lowerLimit(spare: 48), let upstream = TestTransport.make(),
                      let recording = try? RecordingTransport(file: file, mode: .record, upstream: upstream) else { exit(2) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: .never), transport: recording,
                                      responseQueue: .global())
                func run(_ path: String) async -> String {
                    await DescriptorCacheAttackTests.outcome(api.request(route: .get(base + path)), expected: "plain \(path)")
                }
                print("first: \(await run("/r/1"))")
                let taken = DescriptorPersistenceAttackTests.takeAll()
                let second = await run("/r/2")
                taken.forEach { close($0) }
                print("second: \(second == "ok" || second.hasPrefix("typed ") ? "settled" : second)")
                print("third: \(await run("/r/3"))")
                let data = (try? Data(contentsOf: file)) ?? Data()
                let log = ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any])?["log"] as? [String: Any]
                let entries = (log?["entries"] as? [[String: Any]] ?? []).map { entry -> String in
                    let url = (entry["request"] as? [String: Any])?["url"] as? String ?? "?"
                    let text = ((entry["response"] as? [String: Any])?["content"] as? [String: Any])?["text"] as? String ?? "?"
                    return "\(url.dropFirst(base.count)) \(text)"
                }
                print("in the file: \(entries)")
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map(String.init)
        #expect(lines == ["first: ok", "second: settled", "third: ok", "in the file: [\"/r/1 plain /r/1\", \"/r/2 plain /r/2\", \"/r/3 plain /r/3\"]"], "\(printed)")
    }
    /// The public suffix list is loaded (libpsl, and its file) at the first cookie that names a
    /// domain: here while no descriptor is free. That cookie may be refused (without the list,
    /// only a host's own cookies are taken); once descriptors are free, a domain's cookie is
    /// taken as it would have been.
    @Test(.exitTest) func thePublicSuffixListFirstLoadedWhileNoDescriptorIsFreeIsLoadedOnceOneIs() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                CrashBacktrace.printOnCrash()
                let jar = CookieJar()
                guard DescriptorWaitAttackTests.lowerLimit(spare: 48), let api = URL(string: "https://api.shop.example/"),
                      let www = URL(string: "https://www.shop.example/") else { exit(2) }
                let taken = DescriptorPersistenceAttackTests.takeAll()
                jar.setCookies(from: ["early=1; Domain=shop.example; Max-Age=3600"], for: api)
                taken.forEach { close($0) }
                jar.setCookies(from: ["late=1; Domain=shop.example; Max-Age=3600"], for: api)
                jar.setCookies(from: ["own=1; Max-Age=3600"], for: api)
                print("to www: \(jar.cookies(for: www).map(\.name).sorted())")
                print("to api: \(jar.cookies(for: api).map(\.name).sorted())")
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map(String.init)
        // The early one, set while the list could not be loaded, may have been refused (here
        // libpsl is loaded with libcurl at the start, and its built-in list taken without a file).
        #expect(lines.count == 2 && lines[0].hasPrefix("to www: ") && lines[0].hasSuffix("\"late\"]"), "\(printed)")
        #expect(lines.count == 2 && lines[1].hasPrefix("to api: ") && lines[1].hasSuffix("\"late\", \"own\"]"), "\(printed)")
    }
    #endif
}
