#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation
import Testing
@testable import Tern
import TernTesting

/// A server that signs the user out by expiring the session cookie (`Max-Age=0`), while the disk
/// will not let the jar's file be written.
///
/// Promised (Security.md): "A cookie jar keeps its last whole file and writes again at the next
/// request" (a full disk), and "a cookie jar whose file could not be written then writes it
/// again at the next request" (no descriptor free); "`Max-Age` (0 deletes) [is] honoured".
///
/// What goes wrong: the write is tried again only from `CookieJar.headerValue(for:)`, which the
/// pipeline calls only while the jar holds a cookie (`addCookies` returns first when
/// `jar.isEmpty`). A deletion that empties the jar is therefore never written: the next
/// requests, with room on the disk again, leave the file as it was, and the next launch reads
/// the expired session back: the user the server signed out is signed in again.
///
/// Run in a child process whose files may not grow at all while the server deletes the cookie
/// (``DiskFullDownloadAttackTests/limitFiles(to:)``).
@Suite(.onTestThreads) struct EmptiedCookieJarWriteAttackTests {
    /// `/login` sets `session=alice` for an hour; `/logout` expires it; anything else sets nothing.
    static func server() throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let path = request.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
                let cookie = switch path {
                case "/login": "Set-Cookie: session=alice; Max-Age=3600; Path=/\r\n"
                case "/logout": "Set-Cookie: session=; Max-Age=0; Path=/\r\n"
                default: ""
                }
                guard connection.send(RawServer.Connection.response("done", headers: cookie)) else { return }
            }
        }
    }

    #if os(Linux) && compiler(>=6.3)
    @Test(.exitTest) func aSignOutThatEmptiesTheJarIsWrittenOnceTheDiskHasRoom() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String] in
                CrashBacktrace.printOnCrash()
                let manager = FileManager.default
                let folder = manager.temporaryDirectory.appendingPathComponent("attack87-emptied-jar-\(getpid())")
                let file = folder.appendingPathComponent("cookies.json")
                defer { try? manager.removeItem(at: folder) }
                guard (try? manager.createDirectory(at: folder, withIntermediateDirectories: true)) != nil,
                      let transport = TestTransport.make() else { exit(2) }
                let jar = CookieJar(file: file)
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: .never, cookies: .shared(jar)),
                                      transport: transport, responseQueue: .global())
                func step(_ path: String) async {
                    let promise: Promise<String> = api.request(route: .get(base + path))
                    let outcome = await DescriptorCacheAttackTests.outcome(promise, expected: "done")
                    jar.waitForWrites()
                    let saved = CookieJar(file: file).all.map { "\($0.name)=\($0.value)" }.sorted()
                    print("\(path): \(outcome), jar \(jar.all.map(\.name)), file \(saved)")
                }
                await step("/login")
                guard DiskFullDownloadAttackTests.limitFiles(to: 0) else { exit(2) }
                await step("/logout")
                guard DiskFullDownloadAttackTests.limitFiles(to: nil) else { exit(2) }
                await step("/next")
                await step("/again")
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map(String.init)
        #expect(lines == [
            "/login: ok, jar [\"session\"], file [\"session=alice\"]",
            "/logout: ok, jar [], file [\"session=alice\"]",
            "/next: ok, jar [], file []",
            "/again: ok, jar [], file []",
        ], "\(printed)")
    }
    #endif
}
