// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Glibc
import Testing
@testable import Tern

/// Two runs of a tool (two launches of an app) keeping cookies in one file, one of them stopped
/// (Ctrl-Z, a debugger's breakpoint, the system suspending it) in the middle of its write, while
/// it holds the folder's lock: it has read the file and not yet replaced it. The other jar waited
/// two seconds for the lock, then read, merged and wrote the file without it. When the stopped
/// run went on, it replaced the file with what it read before, plus its own change: the cookie
/// the other jar wrote meanwhile was gone from the file. The running jar counted it as written
/// (`CookieFileMerge.wrote`), so its later writes never put it back: the next launch was signed
/// out (or, for a deletion, signed back in). Now the jar's write waits for the lock, trying
/// again each second.
///
/// Promised (`CookieJar.init(file:)`): "Jars in several launches (or processes) may share the
/// file: each writes what it changed over what the file holds then, under a lock on the folder,
/// and keeps what the others set or deleted." Recordings had the same flaw (a write past a lock
/// held by a stopped process dropped the other's exchanges) and now settle unwritten and write
/// again once the lock is free.
///
/// The other run is a child process (an exit test) setting cookies in a loop; the test stops it
/// with `SIGSTOP` at a moment it holds the folder's lock, its new file written beside the jar's
/// and not yet renamed. Its file holds a few thousand cookies of other sites, so that its
/// writes take long enough to be stopped in. The jar does not depend on the transport: it fails the same on both.
/// (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads, .exitTest) struct CookieJarStoppedHolderAttackTests {
    /// A jar's file holding `count` lasting cookies, one for each of `count` other sites.
    static func seed(_ file: URL, count: Int) throws {
        let now = Date().timeIntervalSinceReferenceDate
        let cookies = (0..<count).map { index in
            #"{"name":"visit","value":"\#(index)","domain":"site\#(index).example","isHostOnly":true,"path":"/","#
                + #""expires":\#(now + 86_400),"isSecure":false,"isHTTPOnly":false,"created":\#(now - Double(count - index))}"#
        }
        try Data(("[" + cookies.joined(separator: ",") + "]").utf8).write(to: file)
        _ = chmod(file.path, 0o600)
    }

    @Test func aCookieWrittenWhileAStoppedJarHoldsTheLockIsNotLostWhenItGoesOn() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("tern-stopped-jar-\(UUID().uuidString)")
        let folder = work.appendingPathComponent("jar")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let file = folder.appendingPathComponent("cookies.json")
        try Self.seed(file, count: 4000)
        let pidFile = work.appendingPathComponent("child.pid")
        let stopFile = work.appendingPathComponent("stop")

        let child = Task.onTestThreads {
            await ExitTestTurns.inTurn {
                await #expect(processExitsWith: .success) {
                    [file = file.path as String, pidFile = pidFile.path as String, stopFile = stopFile.path as String] in
                    let jar = CookieJar(file: URL(fileURLWithPath: file))
                    try? String(getpid()).write(toFile: pidFile, atomically: true, encoding: .utf8)
                    let deadline = Date() + 60
                    var index = 0
                    while !FileManager.default.fileExists(atPath: stopFile), Date() < deadline {
                        jar.setCookies(from: ["tab\(index % 20)=\(index); Max-Age=3600"], for: URL(string: "https://other.example/")!)
                        jar.waitForWrites()
                        index += 1
                    }
                    exit(0)
                }
            }
        }
        defer { _ = FileManager.default.createFile(atPath: stopFile.path, contents: Data()) }

        let pid = try await StoppedProcess.pid(writtenTo: pidFile)
        try #require(pid > 0, "the child never ran")
        defer { kill(pid, SIGCONT) }   // never left stopped, whatever fails

        // Stopped at a moment it holds the folder's lock, in the middle of its write: its new
        // file is beside the jar's, not yet renamed.
        let stoppedHolding = StoppedProcess.stop(pid) {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            return StoppedProcess.isLocked(folder.path) && names.contains { $0.hasPrefix(".cookies.json.") && $0.hasSuffix(".tmp") }
        }
        try #require(stoppedHolding, "the child was never stopped while it held the lock")

        // This run's jar signs in meanwhile, and waits for the lock.
        let url = URL(string: "https://shop.example/")!
        let jar = CookieJar(file: file)
        jar.setCookies(from: ["session=alice; Max-Age=3600"], for: url)
        try await Task.sleep(for: .seconds(7))   // past its first wait for the lock

        // The stopped run goes on, finishes its write, and ends.
        kill(pid, SIGCONT)
        _ = FileManager.default.createFile(atPath: stopFile.path, contents: Data())
        _ = await child.value

        // A later change of this jar's is written over the file as it finds it.
        jar.setCookies(from: ["theme=dark; Max-Age=3600"], for: url)
        let expected = ["session=alice", "theme=dark"]
        var nextLaunch: [String] = []
        for _ in 0..<400 where nextLaunch != expected {
            nextLaunch = CookieJar(file: file).cookies(for: url).map { "\($0.name)=\($0.value)" }.sorted()
            if nextLaunch != expected { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(nextLaunch == expected,
                "the file, once the stopped run went on and this jar wrote again: the session cookie was lost")
    }
}
#endif
