import Foundation
import Testing
import Tern
import TernTesting

/// A browser's export, recorded into in `.missing` mode by a test that sends the same session
/// cookie: the export lists each cookie apart (`cookies[]`), which Tern never writes. The value
/// hidden in the new entry's `Cookie` must be hidden in the export's entries too
/// (RecordingAndReplaying.md: "a value once hidden is hidden wherever else it appears, in
/// entries recorded before as well as after"); the file was written again with it in clear.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct BrowserExportScrubAttackTests {
    @Test func aCookieHiddenNowIsHiddenInTheExportsCookieList() async throws {
        let file = scratchRecording("export.har")
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let secret = "sid-\(UUID().uuidString)"
        try Data(BrowserArchiveTests.export.replacingOccurrences(of: "[redacted]", with: secret).utf8).write(to: file.creatingDirectory())
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/me", answers: .json(#"{"name": "tern", "price": 1}"#)))
        let api = try TestAPI(baseURL: "https://shop.example", transport: RecordingTransport(file: file, mode: .missing, upstream: stubs))
        let _: Product = try await api.request(route: api.get(endpoint: "/me"), options: RequestOptions(headers: ["Cookie": "sid=\(secret)"])).value
        let written = try String(contentsOf: file, encoding: .utf8)
        #expect(written.contains("/me") && written.contains("/products"), "the new entry and the export's are in the file")
        let lines = written.split(separator: "\n").filter { $0.contains(secret) }
        #expect(lines.isEmpty, "the cookie's value is in the recording: \(lines)")
    }
}
