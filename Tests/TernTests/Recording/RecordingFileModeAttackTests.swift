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

    #if canImport(Glibc)
    /// The mode is the file's from its first byte to the last: no file of the recording's bytes
    /// is ever wider than it, neither the new file being written (of the default mode, which
    /// another user may open and keep open) nor the file put in place before its mode is given
    /// back. Told from the kernel's record of the directory: a mode given to a file after bytes
    /// were written to it, or after it was put in place, is a window.
    @Test func aRecordingIsNeverWiderThanItsModeWhileItIsWritten() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/**", answers: .json(#"{"name": "tern", "price": 3}"#)))
        let api = try TestAPI(baseURL: "https://shop.example", transport: RecordingTransport(file: file, mode: .record, upstream: stubs))
        let _: Product = try await api.request(route: api.get(endpoint: "/first")).value
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        let events = try DirectoryEvents(watching: file.deletingLastPathComponent().path)
        let _: Product = try await api.request(route: api.get(endpoint: "/again")).value
        var written: Set<String> = [], placed: Set<String> = []
        let seen = events.read()
        for event in seen {
            if event.mask & UInt32(IN_ATTRIB) != 0 {
                #expect(!written.contains(event.name), "\(event.name)'s mode was given after bytes were written to it")
                #expect(!placed.contains(event.name), "\(event.name)'s mode was given after it was put in place")
            }
            if event.mask & UInt32(IN_MODIFY) != 0 { written.insert(event.name) }
            if event.mask & UInt32(IN_MOVED_TO) != 0 { placed.insert(event.name) }
        }
        #expect(placed == [file.lastPathComponent], "the write seen: \(seen.map { ($0.name, $0.mask) })")
        #expect(!written.isEmpty)
        #expect(try String(permissions(of: file), radix: 8) == "600")
    }
    #endif
}
