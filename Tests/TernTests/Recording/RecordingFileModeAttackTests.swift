import Foundation
import Testing
import Tern
import TernTesting

/// The recording's file mode where the user set it: a recording narrowed to its owner
/// (`chmod 600`: it holds a staging session's data) is written again at each exchange
/// recorded, and must not be opened to the machine's other users by the write.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingFileModeAttackTests {
    func permissions(of file: URL) throws -> Int {
        try (FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    /// Recorded in both modes that write: the file keeps the mode its owner gave it, through a
    /// link too (the mode of the file the link leads to).
    @Test(arguments: [(RecordingTransport.Mode.missing, false), (.record, false), (.missing, true)])
    func aRecordingsModeIsKeptWhenItIsWrittenAgain(mode: RecordingTransport.Mode, linked: Bool) async throws {
        let real = scratchRecording()
        defer { try? FileManager.default.removeItem(at: real.deletingLastPathComponent()) }
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/**", answers: .json(#"{"name": "tern", "price": 3}"#)))
        let api = { (mode: RecordingTransport.Mode, file: URL) in
            try TestAPI(baseURL: "https://shop.example", transport: RecordingTransport(file: file, mode: mode, upstream: stubs))
        }
        let first = try api(.record, real)
        let _: Product = try await first.request(route: first.get(endpoint: "/first")).value
        for narrowed in [0o600, 0o640] {
            try FileManager.default.setAttributes([.posixPermissions: narrowed], ofItemAtPath: real.path)
            let file = linked ? real.deletingLastPathComponent().appendingPathComponent("link-\(narrowed).har") : real
            if linked { try FileManager.default.createSymbolicLink(at: file, withDestinationURL: real) }
            let again = try api(mode, file)
            let _: Product = try await again.request(route: again.get(endpoint: "/again-\(narrowed)")).value
            #expect(try String(permissions(of: real), radix: 8) == String(narrowed, radix: 8), "the file's mode after \(mode) writes it")
        }
    }
}
