// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Glibc
import Testing
@testable import Tern

/// A command-line tool that signs in and exits (`tool login`, then `tool orders` in its next
/// run), keeping its cookies in a file (`CookieJar(file:)`). The server's `Set-Cookie` was kept
/// in the jar as the response was read, but the file was written later, on the jar's own queue
/// (`CookieJar.save`, `writer.async`): the request's promise settled first, the tool printed
/// "signed in" and returned from `main`, and the process ended before the write. The next run
/// was signed out. Now a promise settles once the jar's write is done.
///
/// Promised (`CookieJar`): "A jar made with a file keeps its cookies there across launches:
/// those with an expiry [...] written whole and atomically [...] after each change"; Security.md:
/// "Jars in two launches may share it". (Recordings promise the same moment outright: the file
/// "is on disk when the request's promise settles".)
///
/// Run in a child process (an exit test) that exits as soon as the promise settles, as a tool's
/// `main` returns. Its jar holds a couple of thousand cookies of other sites, as a long-used
/// jar does, so that its write is not over before the exit by luck (with an empty jar, 1 run
/// in 3 failed here). Fails the same on both transports.
/// (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads, .exitTest) struct CookieJarExitAttackTests {
    @Test func aCookieSetByTheLastRequestBeforeTheProcessExitsIsInTheFile() async throws {
        let server = try EmptiedCookieJarWriteAttackTests.server()
        defer { server.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tern-jar-exit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("cookies.json")
        try CookieJarStoppedHolderAttackTests.seed(file, count: 2000)

        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String, file = file.path as String] in
                guard let transport = TestTransport.make() else { exit(2) }
                let jar = CookieJar(file: URL(fileURLWithPath: file))
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: .never, cookies: .shared(jar)),
                                      transport: transport, responseQueue: .global())
                let promise: Promise<String> = api.request(route: .get(base + "/login"))
                let outcome = await promise.result
                print("signed in: \((try? outcome.get()) ?? "\(outcome)")")
                exit(0)
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(printed.contains("signed in: done"), "\(printed)")
        let nextRun = CookieJar(file: file).cookies(for: URL(string: server.baseURL + "/orders")!).map { "\($0.name)=\($0.value)" }
        #expect(nextRun == ["session=alice"], "the tool's next run finds no session")
    }
}
#endif
