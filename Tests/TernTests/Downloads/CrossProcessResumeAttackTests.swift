// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Glibc
import Testing
@testable import Tern
import TernTesting

/// One download resumed from the same bytes by two processes at once: a command-line tool run
/// again (in another terminal, or by cron) while its first run still downloads. The bytes were
/// one download's at a time within a process only: the second process opened the file the
/// first was writing, cut it back to the record's bytes at its answer's head, and the first went
/// on writing after a hole of zeros and delivered that as the whole file. The file is now locked
/// for the process that writes it; the later one finds it locked and starts over in a file of its
/// own. The second process is a child (an exit test). On every transport. A process killed as it
/// resumes leaves the bytes resumable still: the lock goes with it.
/// (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads, .exitTest) struct CrossProcessResumeAttackTests {
    typealias Lie = ResumeLie

    /// The file: 3 MiB, so that the first download writes to disk (a mebibyte at a time) before
    /// it has all.
    static let body = Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12 | 1) })
    /// How many bytes the record says are on disk.
    static let held = 1000

    /// The size of `file`, if it is there.
    static func size(of file: URL) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.intValue ?? 0
    }

    @Test func aResumeInAnotherProcessWhileTheFirstWritesLeavesItWhole() async throws {
        let directory = try Lie.Directory()
        let body = Self.body
        let releaseFirst = DispatchSemaphore(value: 0)
        let count = Locked(0)
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let index = count.withLock { $0 += 1; return $0 }
                let (head, rest) = Lie.ranged(request, of: body)
                guard !head.isEmpty else {
                    // A download that started over: the whole file.
                    guard connection.send(rest) else { return }
                    continue
                }
                if index == 1 {
                    // This process's resume: two mebibytes, then the rest once the child has ended.
                    guard connection.send(head + rest.prefix(2 << 20)) else { return }
                    _ = releaseFirst.wait(timeout: .now() + 60)
                    guard connection.send(Array(rest.dropFirst(2 << 20))) else { return }
                } else {
                    // The child's resume: its head and a few bytes, then the connection ends.
                    _ = connection.send(head + rest.prefix(10))
                    return
                }
            }
        }
        defer {
            releaseFirst.signal()
            server.stop()
        }
        let resume = try directory.resume(of: body, offset: Self.held, from: server.baseURL + "/file")
        let api = try Lie.api()
        let first = api.download(route: .get(server.baseURL + "/file"), to: directory.destination, replacing: true, resumingFrom: resume)
        // The first has written to disk past the bytes it resumed from.
        try #require(await eventually(timeout: 20) { directory.partialFiles.contains { Self.size(of: $0) > Self.held + (1 << 20) / 2 } })
        let record = String(decoding: try JSONEncoder().encode(resume), as: UTF8.self)
        await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success) { [record = record as String] in
                let resume = try JSONDecoder().decode(ResumableDownload.self, from: Data(record.utf8))
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never),
                                      transport: TestTransport.make(), responseQueue: .global())
                _ = await api.download(route: .get(resume.url.absoluteString), to: resume.destination, replacing: true,
                                       resumingFrom: resume).result
            }
        }
        releaseFirst.signal()
        switch await Lie.result(of: first) {
        case .success:
            #expect(try Data(contentsOf: directory.destination) == body, "the first download delivered a file that is not the server's")
        case .failure(let error):
            #expect(error is APIError, "\(error)")
        }
    }

    @Test func aProcessKilledWhileItResumesLeavesTheBytesToTheNextRun() async throws {
        let directory = try Lie.Directory()
        let body = Self.body
        let count = Locked(0)
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let index = count.withLock { $0 += 1; return $0 }
                let (head, rest) = Lie.ranged(request, of: body)
                guard !head.isEmpty else {
                    guard connection.send(rest) else { return }
                    continue
                }
                // The child's resume: two mebibytes, then nothing more until it is killed.
                guard connection.send(index == 1 ? head + rest.prefix(2 << 20) : head + rest) else { return }
                if index == 1 { _ = connection.readRequest() }
            }
        }
        defer { server.stop() }
        let resume = try directory.resume(of: body, offset: Self.held, from: server.baseURL + "/file")
        let record = String(decoding: try JSONEncoder().encode(resume), as: UTF8.self)
        await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .signal(SIGKILL)) { [record = record as String] in
                let resume = try JSONDecoder().decode(ResumableDownload.self, from: Data(record.utf8))
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never),
                                      transport: TestTransport.make(), responseQueue: .global())
                _ = api.download(route: .get(resume.url.absoluteString), to: resume.destination, replacing: true, resumingFrom: resume)
                // Killed once it has written past the bytes it resumed from, with nothing cancelled or recorded.
                let deadline = Date(timeIntervalSinceNow: 20)
                while fileSize(of: resume.partialFile) ?? 0 <= Int64(Self.held + (1 << 20) / 2), Date() < deadline { usleep(10_000) }
                kill(getpid(), SIGKILL)
            }
        }
        let pending = try #require(ResumableDownload.pending(for: directory.destination), "the killed run left nothing to resume")
        let api = try Lie.api()
        let file = try await api.download(route: .get(server.baseURL + "/file"), to: directory.destination, replacing: true, resumingFrom: pending).value
        #expect(file.resumedBytes > 0, "the next run started over")
        #expect(try Data(contentsOf: directory.destination) == body)
    }
}
#endif
