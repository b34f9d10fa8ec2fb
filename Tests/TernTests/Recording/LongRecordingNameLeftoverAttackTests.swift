import Foundation
import Testing
import Tern
import TernTesting
import TernTransport

/// A recording whose file name is long (a test's name in Japanese, 74 characters, 214 bytes of
/// UTF-8, of the 255 a Linux name may have), meeting what a crash left of an earlier write of
/// it. Tern names the hidden files beside a long name from a shortened stem
/// (`OwnFiles.stem(of:)`: "the hidden names Tern keeps beside a long file name fit the file
/// system"), and writes the recording under such a name (`OwnFiles.temporary(beside:)`) before
/// renaming it into place. The next run removes what a crashed run left
/// (``RecordingUserFilesAttackTests/whatACrashLeftOfAWriteIsRemovedByTheNextRun()``: "They were
/// never removed: a fixtures folder filled with copies"); but `OwnFiles.isTemporary` skips the
/// name's whole length, not its stem's, and finds no UUID in a name it gave itself: beside a
/// long name, nothing a crash left is ever removed. (The cookie jar's sweep
/// (`CookieJar`, `OwnFiles.removeAbandonedTemporaries`) goes through the same test.)
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct LongRecordingNameLeftoverAttackTests {
    @Test func whatACrashLeftBesideALongNameIsRemovedByTheNextRun() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tern-attack89a-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent(String(repeating: "商品一覧の表示", count: 10) + ".har")
        #expect(file.lastPathComponent.utf8.count > 203 && file.lastPathComponent.utf8.count <= 255)
        // The file system takes the name, and the hidden name Tern gives a write of it.
        let crashed = OwnFiles.temporary(beside: file)
        #expect(FileManager.default.createFile(atPath: crashed.path, contents: Data("{\"half\": ".utf8)))
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -2 * 3600)], ofItemAtPath: crashed.path)
        // Tern's own test of its names does not know this one.
        #expect(OwnFiles.isTemporary(crashed.lastPathComponent, of: file.lastPathComponent))

        let stubs = StubTransport()
        stubs.add(Stub(.get, "/**", answers: .json(#"{"name": "tern", "price": 3}"#)))
        let api = try TestAPI(baseURL: "https://shop.example", configuration: APIConfiguration(retryPolicy: .never),
                              transport: RecordingTransport(file: file, mode: .record, upstream: stubs))
        let product: Product = try await api.request(route: api.get(endpoint: "/first")).value
        #expect(product.name == "tern")
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(left == [file.lastPathComponent], "what a crash left two hours ago is still there: \(left)")
    }
}
