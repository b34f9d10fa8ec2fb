// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
@testable import TernTesting

/// Two processes recording into one file at once (two `swift test` runs, a test and its child):
/// each reads the file again before it writes, but without a lock between them both read one
/// version and the second write drops what the first added. A child process records while
/// this one does, through a link to the file: every exchange of both is in the file afterwards,
/// and nothing but the file and the link is left in the folder.
/// (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads, .exitTest) struct RecordingAcrossProcessesTests {
    static let count = 100
    static let baseURL = "https://shop.example"

    static func stubs() -> StubTransport {
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/**", answers: .json(#"{"name": "tern", "price": 3}"#)))
        return stubs
    }

    /// Whether the file holds the entry of `path`'s exchange; waits up to 60 s for it.
    static func waitUntilRecorded(_ path: String, in file: URL) async throws -> Bool {
        let needle = Data("\"\(baseURL + path)\"".utf8)
        for _ in 0..<600 {
            if let data = try? Data(contentsOf: file), data.range(of: needle) != nil { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    static func record(_ path: String, with transport: RecordingTransport) async throws {
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: transport, responseQueue: .global())
        let _: Data = try await api.request(route: .get(baseURL + path)).value
    }

    @Test func twoProcessesRecordingIntoOneFileLoseNoEntry() async throws {
        let folder = try newFolder("tern-har-processes-")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("session.har")
        let link = folder.appendingPathComponent("linked.har")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: file)
        let (child, parent) = await ExitTestTurns.inTurn {
            // This process records once the child has begun, and the child goes on once this
            // one has: the two record at once.
            let parent = Task<String, any Error>.onTestThreads {
                guard try await Self.waitUntilRecorded("/child/0", in: file) else { return "the child recorded nothing" }
                let transport = try RecordingTransport(file: file, mode: .missing, upstream: Self.stubs())
                for index in 0..<Self.count { try await Self.record("/parent/\(index)", with: transport) }
                return "recorded"
            }
            let child = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [path = link.path as String] in
                lowerThisProcesssPriority()
                let link = URL(fileURLWithPath: path)
                do {
                    let transport = try RecordingTransport(file: link, mode: .missing, upstream: RecordingAcrossProcessesTests.stubs())
                    try await RecordingAcrossProcessesTests.record("/child/0", with: transport)
                    guard try await RecordingAcrossProcessesTests.waitUntilRecorded("/parent/0", in: link) else {
                        print("the parent recorded nothing")
                        exit(EXIT_FAILURE)
                    }
                    for index in 1..<RecordingAcrossProcessesTests.count {
                        try await RecordingAcrossProcessesTests.record("/child/\(index)", with: transport)
                    }
                } catch {
                    print("failed: \(error)")
                    exit(EXIT_FAILURE)
                }
            }
            return (child, await parent.result)
        }
        #expect((try? parent.get()) == "recorded", "\(parent)")
        #expect(child != nil, "\(report(of: child))")
        let kept = Set(try recordedEntries(in: file).compactMap { ($0["request"] as? [String: Any])?["url"] as? String })
        let sent = Set((0..<Self.count).flatMap { ["/parent/\($0)", "/child/\($0)"] }.map { Self.baseURL + $0 })
        let lost = sent.subtracting(kept)
        #expect(lost.count == 0, "lost \(lost.count) of \(sent.count), among them \(lost.sorted().prefix(10))")
        #expect(kept.count == sent.count)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) == file.path, "the link was replaced")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["linked.har", "session.har"])
    }

    /// The lock on a file not there yet makes it (empty), and a write that fails leaves none;
    /// where the file cannot be opened (a file where its folder should be), no lock can be had,
    /// and the write goes without.
    @Test func aLockOnAFileNotThereLeavesNoneWhenTheWriteFails() throws {
        let folder = try newFolder("tern-har-lock-")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("new/session.har")
        let (lock, tried) = RecordingFile.FileLock.take(file, patience: 0)
        #expect(tried == .locked)
        #expect(FileManager.default.fileExists(atPath: file.path), "the file was not there while locked")
        lock?.unlock(removingTheFileItMade: true)
        #expect(!FileManager.default.fileExists(atPath: file.path))
        let notAFolder = folder.appendingPathComponent("plain")
        #expect(FileManager.default.createFile(atPath: notAFolder.path, contents: Data()))
        let (none, triedInAFile) = RecordingFile.FileLock.take(notAFolder.appendingPathComponent("session.har"), patience: 0)
        #expect(none == nil && triedInAFile == .unavailable)
    }
}
#endif
