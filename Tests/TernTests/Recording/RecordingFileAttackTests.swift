import Foundation
import Testing
import Tern
import TernTesting

/// A recording's file where it meets the user's machine, attacked: a link or a directory where
/// the file should be, a hostile or corrupt archive, two transports writing one file.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingFileAttackTests {
    func product(_ transport: RecordingTransport, _ baseURL: String, _ path: String) async throws -> Product {
        let api = try TestAPI(baseURL: baseURL, configuration: APIConfiguration(retryPolicy: .never), transport: transport)
        return try await api.request(route: api.get(endpoint: path)).value
    }

    func urls(in file: URL) throws -> [String] {
        try recordedEntries(in: file).compactMap { ($0["request"] as? [String: Any])?["url"] as? String }
    }

    func stubs() -> StubTransport {
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/**", answers: .json(#"{"name": "tern", "price": 3}"#)))
        return stubs
    }

    /// Two transports on one file, as two tests running side by side would have: each writes
    /// the file after each exchange, and neither may drop what the other wrote.
    @Test(arguments: [RecordingTransport.Mode.missing, .record])
    func twoTransportsOnOneFileLoseNoEntry(mode: RecordingTransport.Mode) async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let baseURL = "https://shop.example"
        let first = try RecordingTransport(file: file, mode: mode, upstream: stubs())
        let second = try RecordingTransport(file: file, mode: mode, upstream: stubs())
        for index in 0..<3 {
            _ = try await product(first, baseURL, "/first/\(index)")
            _ = try await product(second, baseURL, "/second/\(index)")
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 3..<20 {
                group.addTask { _ = try await product(first, baseURL, "/first/\(index)") }
                group.addTask { _ = try await product(second, baseURL, "/second/\(index)") }
            }
            try await group.waitForAll()
        }
        let kept = try Set(urls(in: file))
        let sent = Set((0..<20).flatMap { [baseURL + "/first/\($0)", baseURL + "/second/\($0)"] })
        #expect(kept == sent, "lost: \(sent.subtracting(kept).sorted())")
    }

    /// A stream of 10,000 small events that came all at once: the file keeps no pacing record
    /// for each (500,000 such events made a 63 MiB file of a 28 MB body, and a 361 MiB peak).
    @Test func eventsThatCameTogetherAreOnePacingRecord() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/events", answers: .streamed(headers: ["Content-Type": "text/event-stream"],
                                                         Array(repeating: (after: 0, text: "data: tern\n\n"), count: 10_000))))
        // Measured on a clock that stands still: every event came with the one before.
        let api = try TestAPI(baseURL: "https://shop.example", transport: RecordingTransport(file: file, mode: .record, upstream: stubs, clock: TestClock()))
        var events = 0
        for try await _ in api.stream(route: api.get(endpoint: "/events")).events { events += 1 }
        #expect(events == 10_000)
        let pacing = try recordedEntries(in: file).first?["_chunks"] as? [Any]
        #expect((pacing?.count ?? 0) <= 1, "\(pacing?.count ?? 0) pacing records")
    }

    /// A recording path that is a link to a file of the user's, which is no recording: recording
    /// there never writes over the user's file.
    @Test func recordingThroughALinkToAUsersFileLeavesItAlone() async throws {
        let file = scratchRecording()
        let folder = file.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: folder) }
        let notes = try folder.appendingPathComponent("notes.txt").creatingDirectory()
        try Data("my notes\n".utf8).write(to: notes)
        try FileManager.default.createSymbolicLink(at: file, withDestinationURL: notes)
        let recorder = try? RecordingTransport(file: file, mode: .record, upstream: stubs())
        if let recorder { _ = try? await product(recorder, "https://shop.example", "/products") }
        #expect(try String(contentsOf: notes, encoding: .utf8) == "my notes\n")
        // Read as a recording, it is an error, not an empty recording.
        #expect(throws: (any Error).self) { try RecordingTransport(file: file, mode: .missing) }
    }

    /// A file of the user's that is no recording, named as the recording: `record` does not
    /// replace it (a careless path: the fixture's directory's JSON, the package's manifest).
    @Test func recordingOverAFileThatIsNoRecordingIsRefused() async throws {
        let file = scratchRecording("Package.swift")
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try Data("// swift-tools-version:6.0\n".utf8).write(to: file.creatingDirectory())
        do {
            let recorder = try RecordingTransport(file: file, mode: .record, upstream: stubs())
            let error = await apiError(of: try TestAPI(baseURL: "https://shop.example", transport: recorder).request(route: .get("https://shop.example/p")) as Promise<Data>)
            #expect(error?.caseName == "transportFailed")
        } catch {
            #expect("\(error)".contains("not a recording"), "\(error)")
        }
        #expect(try String(contentsOf: file, encoding: .utf8) == "// swift-tools-version:6.0\n")
    }

    /// A directory where the file should be: a clear error, and nothing in it touched.
    @Test func aDirectoryWhereTheFileShouldBeIsAnErrorAndLeftAlone() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try FileManager.default.createDirectory(at: file, withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: file.appendingPathComponent("photo.jpg"))
        #expect(throws: (any Error).self) { try RecordingTransport(file: file, mode: .missing) }
        #expect(throws: (any Error).self) { try RecordingTransport(file: file, mode: .replay) }
        if let recorder = try? RecordingTransport(file: file, mode: .record, upstream: stubs()) {
            let error = await apiError(of: try TestAPI(baseURL: "https://shop.example", transport: recorder).request(route: .get("https://shop.example/p")) as Promise<Data>)
            #expect(error?.caseName == "transportFailed")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: file.path) == ["photo.jpg"])
        #expect(try Data(contentsOf: file.appendingPathComponent("photo.jpg")) == Data("mine".utf8))
    }
}
