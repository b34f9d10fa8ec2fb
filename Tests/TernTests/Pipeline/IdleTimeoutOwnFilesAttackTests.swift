import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting

/// The idle timeout where a request waits for a descriptor of its own (the process had none
/// free outside the last eight), as a request waiting for a connection does: the wait is the
/// process's, not the server's, and is not given up as idle.
/// - A download whose file waits for a descriptor, its transfer held.
/// - An upload whose file found none, run again once another exchange ends (libcurl's).
/// The exit tests run over libcurl: FoundationNetworking makes and closes descriptors of its own
/// as it will. (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads) struct IdleTimeoutOwnFilesAttackTests {
    /// The watch's looks at an exchange whose head came and whose download's file waits for a
    /// descriptor, its transfer held: none gives it up, however many; once the file opens and
    /// nothing moves, it is given up a timeout after the wait's last look, as after a wait for
    /// a connection.
    @Test func theWatchWaitsWithAFileThatWaitsForADescriptor() {
        var state = ExchangeState(attempt: 1)
        func looks(_ count: Int) -> [IdleWatch.Look] {
            (0..<count).map { _ in state.lookForProgress(waitingForConnection: false, timeout: 2) }
        }
        _ = state.headCame(judgedElsewhere: false)
        state.holdWhileTheFileWaits()
        #expect(looks(8) == Array(repeating: .goOn, count: 8))
        _ = state.takeHeld()
        #expect(looks(4) == [.goOn, .goOn, .goOn, .timedOut])
    }

    #if os(Linux) && compiler(>=6.3)
    /// A download whose file finds no descriptor waits for one, its transfer held: for 1.9 s,
    /// six idle timeouts of 0.3 s. The wait is the process's, not the server's: the download is
    /// not given up as idle, and once a descriptor is free its file comes whole.
    @Test(.exitTest, .enabled(if: TestTransport.isCurl, "FoundationNetworking makes and closes descriptors of its own as it will: which one a file finds cannot be arranged"))
    func aDownloadWaitingForADescriptorIsNotIdle() async throws {
        typealias Wait = DescriptorOwnFilesWaitTests
        let server = try Wait.server()
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String] in
                CrashBacktrace.printOnCrash()
                let manager = FileManager.default
                let (api, folder) = await Wait.preparedChild("tern-idle-own-files", base: base)
                defer { try? manager.removeItem(at: folder) }
                let line = Wait.releaseLine(to: base)
                let before = DescriptorWaitAttackTests.sockets()
                let destination = folder.appendingPathComponent("file.txt")
                let early = Wait.takeAllButOneForASocket()
                let download = api.download(route: .get(base + "/d"), to: destination,
                                            options: RequestOptions(timeout: 10, idleTimeout: 0.3))
                let settled = Recorder<Int>()
                download.finally { settled.append(1) }
                let outcome = Task.onTestThreads {
                    await DescriptorFilesAttackTests.settledOnce(download) { $0.fileURL == destination ? "ok" : "wrong file" }
                }
                guard await Wait.newSocket(after: before) else { Wait.couldNotSetTheScene("no new socket seen") }
                let spare = Wait.takeTheSpare { !settled.items.isEmpty }
                let taken = early + spare + (await Wait.keepFileDescriptorsTaken(for: 1900, releasingOver: line) { !settled.items.isEmpty })
                print("settled before a descriptor was free: \(settled.items.count)")
                taken.forEach { close($0) }
                print("download: \(await outcome.value)")
                let bytes = (try? String(contentsOf: destination, encoding: .utf8)).map { $0 == DescriptorFilesAttackTests.content(7) ? "right" : "wrong" }
                print("file: \(bytes ?? "none")")
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        if Wait.excusesUnsetScene(printed) { return }
        let lines = printed.split(separator: "\n").map(String.init)
        #expect(lines.contains("settled before a descriptor was free: 0"), "\(printed)")
        #expect(lines.contains("download: ok"), "\(printed)")
        #expect(lines.contains("file: right"), "\(printed)")
    }

    /// An upload whose file finds no descriptor while another request runs waits for it to
    /// end, 0.5 s, near two idle timeouts of 0.3 s: it is not given up as idle, and arrives whole.
    @Test(.exitTest, .enabled(if: TestTransport.isCurl, "the wait for another exchange to end is libcurl's"))
    func anUploadWaitingForADescriptorIsNotIdle() async throws {
        try await DescriptorOwnFilesWaitTests.uploadWaitsForADescriptor(idleTimeout: 0.3)
    }
    #endif
}
