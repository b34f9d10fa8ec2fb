// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Glibc
import Testing
import Tern
@testable import TernTesting

/// Two processes recording into one file (two `swift test` runs, a test and its child), one of
/// them stopped in the middle of its write (a breakpoint in the debugger, Ctrl-Z), holding the
/// file's lock: it has read the file again and not yet replaced it. The other's exchange settles
/// unwritten after five seconds, and after thirty a retry writes it without the lock. When the
/// stopped process went on, it replaced the file with what it had read, and its own entry: the
/// other's exchange was gone from the file, and the other, which counted it written and read
/// the file again before its next write, never put it back. Now the stopped one finds the file
/// changed since it read it, and reads it again before it replaces it; and the other writes
/// again under the lock once it is free, putting back what it wrote past the holder. (Stopped
/// between that check and its rename, an instant no check can close, the stopped one writes
/// over the exchange, and only the other's next write puts it back: the test stops it before.)
///
/// Promised (RecordingAndReplaying.md): "Transports recording into one file at once [...] share
/// it, and none writes over what another added. Processes do too [...]: each takes an advisory
/// lock (`flock`) on the file while it reads it again and writes it". And `.record` "writes the
/// file anew, after each exchange, so it is on disk when the request's promise settles".
///
/// The other process is a child (an exit test) recording in a loop into a file of a few
/// megabytes, so that most of its time under the lock goes between reading the file again and
/// replacing it; the test stops it with `SIGSTOP` at a moment it holds the lock, its new file
/// beside the recording and not yet whole. Recording goes through a `StubTransport`: it
/// does not depend on the transport, and fails the same on both.
/// (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads, .exitTest) struct RecordingStoppedHolderAttackTests {
    static let baseURL = "https://shop.example"

    static func stubs() -> StubTransport {
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/**", answers: .json(#"{"name": "tern", "price": 3}"#)))
        return stubs
    }

    static func record(_ path: String, with transport: RecordingTransport) async throws {
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: transport, responseQueue: .global())
        let _: Data = try await api.request(route: .get(baseURL + path)).value
    }

    /// Whether the file holds the entry of `path`'s exchange.
    static func holds(_ path: String, _ file: URL) -> Bool {
        guard let data = try? Data(contentsOf: file) else { return false }
        return data.range(of: Data("\"\(baseURL + path)\"".utf8)) != nil
    }

    @Test func anExchangeWrittenWhileAStoppedRecorderHoldsTheLockIsNotLostWhenItGoesOn() async throws {
        let folder = try newFolder("tern-har-stopped-")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("session.har")
        let body = String(repeating: "x", count: 4000)
        let seeded = (0..<500).map { RecordingTransportTests.entry("GET", Self.baseURL + "/seed/\($0)", body: body) }
        try Data(RecordingTransportTests.archive(entries: seeded).utf8).write(to: file)
        let pidFile = folder.appendingPathComponent("child.pid")
        let stopFile = folder.appendingPathComponent("stop")

        let child = Task.onTestThreads {
            await ExitTestTurns.inTurn {
                await #expect(processExitsWith: .success) {
                    [file = file.path as String, pidFile = pidFile.path as String, stopFile = stopFile.path as String] in
                    guard let transport = try? RecordingTransport(file: URL(fileURLWithPath: file), mode: .missing,
                                                                  upstream: RecordingStoppedHolderAttackTests.stubs()) else { exit(2) }
                    try? await RecordingStoppedHolderAttackTests.record("/child/first", with: transport)
                    try? String(getpid()).write(toFile: pidFile, atomically: true, encoding: .utf8)
                    let deadline = Date() + 100
                    var index = 0
                    while !FileManager.default.fileExists(atPath: stopFile), Date() < deadline {
                        try? await RecordingStoppedHolderAttackTests.record("/child/\(index)", with: transport)
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

        // Stopped at a moment it holds the file's lock, in the middle of its write: its new file
        // is beside the recording, not yet whole (smaller than the recording, which it only adds
        // to), so the child has yet to check whether the recording changed since it read it.
        let stoppedHolding = StoppedProcess.stop(pid) {
            func size(_ path: String) -> Int? {
                var status = stat()
                return stat(path, &status) == 0 ? Int(status.st_size) : nil
            }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            guard StoppedProcess.isLocked(file.path), let recording = size(file.path) else { return false }
            return names.contains { name in
                name.hasPrefix(".session.har.") && name.hasSuffix(".tmp")
                    && (size(folder.appendingPathComponent(name).path) ?? .max) < recording
            }
        }
        try #require(stoppedHolding, "the child was never stopped while it held the lock")

        // This process records meanwhile: its exchange settles, and is written without the lock
        // after thirty seconds.
        let transport = try RecordingTransport(file: file, mode: .missing, upstream: Self.stubs())
        try await Self.record("/parent/first", with: transport)
        var writtenMeanwhile = false
        for _ in 0..<600 where !writtenMeanwhile {
            writtenMeanwhile = Self.holds("/parent/first", file)
            if !writtenMeanwhile { try await Task.sleep(for: .milliseconds(100)) }
        }

        // The stopped process goes on, finishes its write, and ends.
        kill(pid, SIGCONT)
        _ = FileManager.default.createFile(atPath: stopFile.path, contents: Data())
        _ = await child.value

        let keptOnceTheOtherEnded = Self.holds("/parent/first", file)
        // This process records again, the lock free.
        try await Self.record("/parent/second", with: transport)

        #expect(writtenMeanwhile, "the exchange was not written within 60 s")
        #expect(Self.holds("/parent/second", file))
        #expect(keptOnceTheOtherEnded, "the exchange this process recorded while the other was stopped is gone from the file")
        #expect(Self.holds("/parent/first", file), "and not put back by this process's next write")
    }
}
#endif
