#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import Tern
import TernTesting

/// A download's destination among the user's own files: a directory of theirs where the file
/// should go, with `replacing` or not; the destination's directory removed, or swapped for a
/// file of theirs, while the body comes. Each download settles once, typed, and what the user
/// had stays as it was: Tern never writes into, removes or recreates what it did not make.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct DownloadUserFilesAttackTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("tern-userfiles-\(UUID().uuidString)")

    static func api() -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
    }

    func entries(_ directory: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
    }

    /// The destination names a directory holding the user's notes: the download fails, typed, and
    /// the directory and its notes are as they were, whether it was asked to replace or not.
    @Test(arguments: [true, false]) func aDirectoryAtTheDestinationIsNeverReplaced(replacing: Bool) async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let destination = root.appendingPathComponent("report")
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
        try Data("the user's".utf8).write(to: destination.appendingPathComponent("notes.txt"))
        let server = try RawServer { connection in
            while connection.readRequest() != nil { guard connection.send(RawServer.Connection.response("downloaded")) else { return } }
        }
        defer { server.stop() }
        let result = await Self.api().download(route: .get(server.baseURL + "/report"), to: destination, replacing: replacing).result
        guard case .failure(APIError.fileFailed) = result else {
            Issue.record("expected fileFailed, got \(result)")
            return
        }
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: destination.path, isDirectory: &isDirectory) && isDirectory.boolValue)
        #expect(entries(destination) == ["notes.txt"])
        #expect(try Data(contentsOf: destination.appendingPathComponent("notes.txt")) == Data("the user's".utf8))
    }

    /// A directory of the user's has the name Tern gives the resume record beside the
    /// destination (`.report.tern-resume`): each download ended (delivered, or failed with
    /// nothing to resume) removes that record, and removed the directory, with what it held.
    @Test(arguments: [true, false]) func aDirectoryNamedAsTheResumeRecordStays(delivered: Bool) async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let destination = root.appendingPathComponent("report")
        let named = root.appendingPathComponent(".report.tern-resume")
        try FileManager.default.createDirectory(at: named, withIntermediateDirectories: true)
        try Data("the user's".utf8).write(to: named.appendingPathComponent("notes.txt"))
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                guard connection.send(RawServer.Connection.response("downloaded", status: delivered ? "200 OK" : "404 Not Found")) else { return }
            }
        }
        defer { server.stop() }
        let result = await Self.api().download(route: .get(server.baseURL + "/report"), to: destination).result
        switch result {
        case .success: #expect(delivered && (try? Data(contentsOf: destination)) == Data("downloaded".utf8))
        case .failure(let error): #expect(!delivered && error is APIError, "\(error)")
        }
        #expect(entries(named) == ["notes.txt"])
        #expect((try? Data(contentsOf: named.appendingPathComponent("notes.txt"))) == Data("the user's".utf8))
    }

    enum Swap: String, CaseIterable, Sendable {
        /// The directory is removed.
        case removed
        /// The directory is removed and a file of the user's takes its name.
        case replacedByAFile
        /// The directory is renamed elsewhere (a user tidying up) and an empty one made in its place.
        case renamedAndRemade
    }

    /// Half the body has come when the destination's directory goes: the download fails, typed,
    /// and leaves nothing behind: no directory recreated, the user's file untouched, nothing
    /// written into the directory that now has the old one's name, or into the moved one beyond
    /// what the download had begun there.
    @Test(arguments: Swap.allCases) func theDestinationsDirectoryGoingMidBodyFailsTyped(swap: Swap) async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let directory = root.appendingPathComponent("downloads")
        let moved = root.appendingPathComponent("moved")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let (halfSent, goOn) = (Recorder<Bool>(), DispatchSemaphore(value: 0))
        let half = [UInt8](repeating: 0x61, count: 3 << 20)
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            guard connection.send("HTTP/1.1 200 OK\r\nContent-Length: \(half.count * 2)\r\nETag: \"v1\"\r\n\r\n"), connection.send(half) else { return }
            halfSent.append(true)
            _ = goOn.wait(timeout: .now() + 20)
            _ = connection.send(half)
        }
        defer { server.stop() }
        let destination = directory.appendingPathComponent("file.bin")
        let download = Self.api().download(route: .get(server.baseURL + "/file"), to: destination)
        // Polled, not waited on: no thread of the concurrency pool is blocked.
        for _ in 0..<2_000 where halfSent.items.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        #expect(!halfSent.items.isEmpty)
        // Tern has opened its partial file once bytes are written: a mebibyte at a time.
        for _ in 0..<400 where entries(directory).isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        #expect(!entries(directory).isEmpty)
        switch swap {
        case .removed:
            try FileManager.default.removeItem(at: directory)
        case .replacedByAFile:
            try FileManager.default.removeItem(at: directory)
            try Data("the user's".utf8).write(to: directory)
        case .renamedAndRemade:
            try FileManager.default.moveItem(at: directory, to: moved)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        }
        goOn.signal()
        let result = await download.result
        switch swap {
        case .removed:
            guard case .failure(APIError.fileFailed) = result else {
                Issue.record("expected fileFailed, got \(result)")
                return
            }
            #expect(!FileManager.default.fileExists(atPath: directory.path))
        case .replacedByAFile:
            guard case .failure(APIError.fileFailed) = result else {
                Issue.record("expected fileFailed, got \(result)")
                return
            }
            #expect(try Data(contentsOf: directory) == Data("the user's".utf8))
        case .renamedAndRemade:
            // The partial file went with its directory; the destination's name now names another.
            // Either the download fails typed, or the whole file lands at the destination: never
            // half of it, and never the moved directory's partial bytes passed off as whole.
            switch result {
            case .success:
                #expect(try Data(contentsOf: destination).count == half.count * 2)
            case .failure(APIError.fileFailed):
                #expect(!FileManager.default.fileExists(atPath: destination.path), "\(entries(directory))")
            case .failure(let error):
                Issue.record("expected the file or fileFailed, got \(error)")
            }
        }
        #expect(entries(root).allSatisfy { ["downloads", "moved"].contains($0) }, "\(entries(root))")
    }
}
