import Foundation
import Testing
import Tern
import TernTesting

/// A recording's file among the user's own, attacked: a folder reached through a link (as
/// macOS's temporary folder is, `/var` being `/private/var`), a link to a recording kept
/// elsewhere, a file edited by hand between runs or while it is open, or rewritten by another
/// process, a folder deleted while a run records into it.
/// Nothing of the user's is lost or replaced, and no exchange recorded is dropped.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingUserFilesAttackTests {
    let baseURL = "https://shop.example"

    func product(_ transport: RecordingTransport, _ path: String) async throws -> Product {
        let api = try TestAPI(baseURL: baseURL, configuration: APIConfiguration(retryPolicy: .never), transport: transport)
        return try await api.request(route: api.get(endpoint: path)).value
    }

    func stubs(price: Int = 3) -> StubTransport {
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/**", answers: .json(#"{"name": "tern", "price": \#(price)}"#)))
        return stubs
    }

    func urls(in file: URL) throws -> [String] {
        try recordedEntries(in: file).compactMap { ($0["request"] as? [String: Any])?["url"] as? String }
    }

    /// A folder of the user's, `real`, and a link to it, `alias`, in a scratch folder.
    func linkedFolder() throws -> (root: URL, real: URL, alias: URL) {
        let root = scratchRecording().deletingLastPathComponent()
        let real = root.appendingPathComponent("real"), alias = root.appendingPathComponent("alias")
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: alias, withDestinationURL: real)
        return (root, real, alias)
    }

    /// One file, named through a linked folder before it was there and after, and by its real
    /// path: the transports share it, and the file keeps every exchange each recorded (two tests
    /// side by side, both naming `fixtures/session.har` under a linked folder, lost each other's).
    @Test(arguments: [RecordingTransport.Mode.missing, .record])
    func aFileInALinkedFolderIsOneFileWhetherItWasThereOrNot(mode: RecordingTransport.Mode) async throws {
        let (root, real, alias) = try linkedFolder()
        defer { try? FileManager.default.removeItem(at: root) }
        let named = alias.appendingPathComponent("session.har")
        let first = try RecordingTransport(file: named, mode: mode, upstream: stubs())
        _ = try await product(first, "/first/0")
        let second = try RecordingTransport(file: named, mode: mode, upstream: stubs())
        let third = try RecordingTransport(file: real.appendingPathComponent("session.har"), mode: mode, upstream: stubs())
        for index in 1..<3 {
            _ = try await product(first, "/first/\(index)")
            _ = try await product(second, "/second/\(index)")
            _ = try await product(third, "/third/\(index)")
        }
        let sent = Set(["/first/0"] + (1..<3).flatMap { ["/first/\($0)", "/second/\($0)", "/third/\($0)"] }).map { baseURL + $0 }
        let kept = try urls(in: real.appendingPathComponent("session.har"))
        #expect(Set(kept) == Set(sent), "lost: \(Set(sent).subtracting(kept).sorted())")
    }

    /// Records `paths` into `file` with a transport that is gone when this returns (as a run
    /// that has ended is): waits for the pipeline to let go of it.
    func record(_ paths: [String], into file: URL, mode: RecordingTransport.Mode, price: Int = 3) async throws {
        weak var gone: RecordingTransport?
        do {
            let transport = try RecordingTransport(file: file, mode: mode, upstream: stubs(price: price))
            gone = transport
            for path in paths { _ = try await product(transport, path) }
        }
        for _ in 0..<1000 where gone != nil { try await Task.sleep(for: .milliseconds(10)) }
        try #require(gone == nil, "the transport is still held")
    }

    /// A fixture that is a link to a recording kept elsewhere (shared by two test targets):
    /// recording through it adds to that recording, and the link stays a link. (It was replaced
    /// by a copy of the recording with the new exchange, the shared file left behind.)
    @Test(arguments: [RecordingTransport.Mode.missing, .record])
    func aLinkToARecordingIsWrittenThroughAndStaysALink(mode: RecordingTransport.Mode) async throws {
        let (root, real, _) = try linkedFolder()
        defer { try? FileManager.default.removeItem(at: root) }
        let shared = real.appendingPathComponent("shared.har")
        try await record(["/products"], into: shared, mode: .record)
        let link = try root.appendingPathComponent("fixtures/products.har").creatingDirectory()
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: shared)
        try await record(["/products", "/products/2"], into: link, mode: mode)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) == shared.path, "the link was replaced")
        #expect(try urls(in: shared) == ["/products", "/products/2"].map { baseURL + $0 })
    }

    /// A fixture linked to a recording not made yet (the links set up first, the recording on
    /// the first run): the recording is made where the link leads, and the link stays a link.
    @Test func aLinkToARecordingNotMadeYetIsWrittenThrough() async throws {
        let (root, real, _) = try linkedFolder()
        defer { try? FileManager.default.removeItem(at: root) }
        let shared = real.appendingPathComponent("shared.har")
        let link = try root.appendingPathComponent("fixtures/products.har").creatingDirectory()
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: shared)
        try await record(["/products"], into: link, mode: .missing)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) == shared.path, "the link was replaced")
        #expect((try? urls(in: shared)) == [baseURL + "/products"])
    }

    /// An answer the user edited by hand between runs: the next run replays the edit, records
    /// what it lacks beside it, and keeps the edit in the file.
    @Test func anAnswerEditedByHandBetweenRunsIsReplayedAndKept() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try await record(["/products/1"], into: file, mode: .record, price: 3)
        let recorded = try String(contentsOf: file, encoding: .utf8)
        #expect(recorded.contains(#"\"price\": 3"#))
        try Data(recorded.replacingOccurrences(of: #"\"price\": 3"#, with: #"\"price\": 99"#).utf8).write(to: file)
        let transport = try RecordingTransport(file: file, mode: .missing, upstream: stubs(price: 5))
        #expect(try await product(transport, "/products/1").price == 99)
        #expect(try await product(transport, "/products/2").price == 5)
        let written = try String(contentsOf: file, encoding: .utf8)
        #expect(written.contains(#"\"price\": 99"#) && !written.contains(#"\"price\": 3"#), "\(written)")
        #expect(try urls(in: file) == [baseURL + "/products/1", baseURL + "/products/2"])
    }

    /// An answer edited by hand while a transport of this process has the file open (a
    /// client kept in a `static`, a watch mode): the next transport to open the file replays the
    /// edit, and the next exchange recorded keeps it. (Transports of one process shared the file
    /// as they had last read and written it: the edit was not replayed, and the next write put
    /// the old answer back, silently.)
    @Test func anAnswerEditedByHandWhileTheFileIsOpenIsNotWrittenOver() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let first = try RecordingTransport(file: file, mode: .record, upstream: stubs(price: 3))
        _ = try await product(first, "/products/1")
        let recorded = try String(contentsOf: file, encoding: .utf8)
        try Data(recorded.replacingOccurrences(of: #"\"price\": 3"#, with: #"\"price\": 99"#).utf8).write(to: file)
        let second = try RecordingTransport(file: file, mode: .missing, upstream: stubs(price: 5))
        #expect(try await product(second, "/products/1").price == 99)
        _ = try await product(second, "/products/2")
        let written = try String(contentsOf: file, encoding: .utf8)
        #expect(written.contains(#"\"price\": 99"#) && !written.contains(#"\"price\": 3"#), "the hand edit was written over: \(written)")
        #expect(try urls(in: file) == [baseURL + "/products/1", baseURL + "/products/2"])
        withExtendedLifetime(first) {}
    }

    /// The file rewritten by another process while this one records into it (a second test
    /// process, an editor's save): what it wrote is kept beside what this one adds; rewritten
    /// as no recording (a save half done, a merge conflict), the next exchange fails, typed, and
    /// the file is left as it is.
    @Test func aFileAnotherProcessRewritesMidRunIsKeptOrLeftAlone() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let transport = try RecordingTransport(file: file, mode: .record, upstream: stubs())
        _ = try await product(transport, "/a")
        let other = RecordingTransportTests.archive(entries: [
            RecordingTransportTests.entry("GET", baseURL + "/a", body: #"{"name": "tern", "price": 3}"#),
            RecordingTransportTests.entry("GET", baseURL + "/other", body: #"{"name": "other", "price": 1}"#),
        ])
        try Data(other.utf8).write(to: file)
        _ = try await product(transport, "/b")
        #expect(try urls(in: file) == ["/a", "/b", "/other"].map { baseURL + $0 })
        let conflict = "<<<<<<< HEAD\n" + other + "=======\n"
        try Data(conflict.utf8).write(to: file)
        let api = try TestAPI(baseURL: baseURL, configuration: APIConfiguration(retryPolicy: .never), transport: transport)
        let error = await apiError(of: api.request(route: api.get(endpoint: "/c")) as Promise<Product>)
        #expect(error?.caseName == "transportFailed", "\(String(describing: error))")
        #expect(try String(contentsOf: file, encoding: .utf8) == conflict)
    }

    /// The folder deleted while a run records into it (a `git clean`, a cleanup of the
    /// temporary folder): the next exchange makes it again, with every exchange of the run.
    @Test func aFolderDeletedMidRunIsMadeAgainWithTheWholeRun() async throws {
        let file = scratchRecording()
        let folder = file.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: folder) }
        let transport = try RecordingTransport(file: file, mode: .record, upstream: stubs())
        _ = try await product(transport, "/products/1")
        try FileManager.default.removeItem(at: folder)
        _ = try await product(transport, "/products/2")
        #expect(try urls(in: file) == [baseURL + "/products/1", baseURL + "/products/2"])
    }

    /// A run that crashed while it wrote the recording left its new file beside it
    /// (`.session.har.<UUID>.tmp`, a copy of the recording's answers): the next run that opens
    /// the recording removes it, once it is an hour old, and nothing else there: not a newer one
    /// (another process writing now), not a crash's of another recording, not a user's file or
    /// folder named alike. (They were never removed: a fixtures folder filled with copies.)
    @Test func whatACrashLeftOfAWriteIsRemovedByTheNextRun() async throws {
        let file = scratchRecording()
        let folder = file.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let hourAgo = Date().addingTimeInterval(-2 * 3600)
        func plant(_ name: String, changed: Date, folder isFolder: Bool = false) throws {
            let path = folder.appendingPathComponent(name).path
            if isFolder {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            } else {
                #expect(FileManager.default.createFile(atPath: path, contents: Data("{\"half\": ".utf8)))
            }
            try FileManager.default.setAttributes([.modificationDate: changed], ofItemAtPath: path)
        }
        let crashed = ".session.har.\(UUID().uuidString).tmp"
        let kept = [".session.har.\(UUID().uuidString).tmp", ".other.har.\(UUID().uuidString).tmp",
                    ".session.har.backup.tmp", ".session.har.\(UUID().uuidString).tmp.keep", ".session.har.\(UUID().uuidString).tmp"]
        try plant(crashed, changed: hourAgo)
        try plant(kept[0], changed: Date())
        try plant(kept[1], changed: hourAgo)
        try plant(kept[2], changed: hourAgo)
        try plant(kept[3], changed: hourAgo)
        try plant(kept[4], changed: hourAgo, folder: true)
        _ = try await product(RecordingTransport(file: file, mode: .record, upstream: stubs()), "/first")
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(left == (kept + ["session.har"]).sorted())
        #expect(try urls(in: file) == ["\(baseURL)/first"])
    }
}
