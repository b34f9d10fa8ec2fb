#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation
import Testing
@testable import Tern
import TernTesting

/// A cookie jar kept in a file (`CookieJar(file:)`) that the disk will not let grow: in a child
/// process whose files may grow no larger than 48 KiB (``DiskFullDownloadAttackTests``), each
/// response sets six cookies of 3,000 bytes (about 20 KB of the file).
/// - Every request succeeds, and the jar holds every cookie, in memory.
/// - The file is written whole or not at all (the jar's API reports no failure: it keeps the
///   last good file): past the limit, it stays byte for byte as it was last written, with no
///   half-written file beside it.
/// - Once the limit is lifted, the next request writes the whole jar, though it changes
///   nothing (before, the jar waited for a change, and an app that quit first lost the cookies).
@Suite(.onTestThreads) struct DiskFullCookieJarAttackTests {
    /// `/set/N` sets `cN_0`…`cN_5`, 3,000 bytes each, for an hour, for a path no request takes;
    /// `/none/N`, none.
    static func server() throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let path = request.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
                let name = path.split(separator: "/").last.map(String.init) ?? "?"
                let cookies = path.hasPrefix("/none/") ? [] : (0..<6).map { "Set-Cookie: c\(name)_\($0)=\(String(repeating: "v", count: 3000)); Max-Age=3600; Path=/elsewhere\r\n" }
                guard connection.send(RawServer.Connection.response("set \(name)", headers: cookies.joined())) else { return }
            }
        }
    }

    #if os(Linux) && compiler(>=6.3)
    @Test(.exitTest) func aJarTheDiskWillNotLetGrowKeepsItsLastGoodFile() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String] in
                CrashBacktrace.printOnCrash()
                let manager = FileManager.default
                let folder = manager.temporaryDirectory.appendingPathComponent("tern-disk-full-cookies-\(getpid())")
                let file = folder.appendingPathComponent("cookies.json")
                defer { try? manager.removeItem(at: folder) }
                guard (try? manager.createDirectory(at: folder, withIntermediateDirectories: true)) != nil,
                      DiskFullDownloadAttackTests.limitFiles(to: 48 << 10), let transport = TestTransport.make() else { exit(2) }
                let jar = CookieJar(file: file)
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: .never, cookies: .shared(jar)),
                                      transport: transport, responseQueue: .global())
                var written = Data()
                for index in 1...5 {
                    if index == 5 { guard DiskFullDownloadAttackTests.limitFiles(to: nil) else { exit(2) } }
                    let promise: Promise<String> = api.request(route: .get(base + (index == 5 ? "/none/" : "/set/") + "\(index)"))
                    let outcome = await DescriptorCacheAttackTests.outcome(promise, expected: "set \(index)")
                    jar.waitForWrites()
                    let now = (try? Data(contentsOf: file)) ?? Data()
                    let names = Set(CookieJar(file: file).all.map(\.name))
                    let sets = Set(names.map { $0.prefix { $0 != "_" } }).sorted()
                    print("\(index): \(outcome), jar \(jar.all.count), file \(names.count) of \(sets), \(now == written ? "unchanged" : "changed"), "
                          + "beside \(DiskFullDownloadAttackTests.listing(folder))")
                    written = now
                }
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map(String.init)
        let beside = "beside [\"cookies.json\"]"
        #expect(lines == [
            "1: ok, jar 6, file 6 of [\"c1\"], changed, \(beside)",
            "2: ok, jar 12, file 12 of [\"c1\", \"c2\"], changed, \(beside)",
            "3: ok, jar 18, file 12 of [\"c1\", \"c2\"], unchanged, \(beside)",
            "4: ok, jar 24, file 12 of [\"c1\", \"c2\"], unchanged, \(beside)",
            "5: ok, jar 24, file 24 of [\"c1\", \"c2\", \"c3\", \"c4\"], changed, \(beside)",
        ], "\(printed)")
    }
    #endif
}
