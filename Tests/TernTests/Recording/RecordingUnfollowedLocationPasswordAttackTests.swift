import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A redirect whose `Location` carries a password (a sign-in handing the app a URL with its
/// credential in it), read by the app itself rather than followed (`redirectPolicy: .never`).
/// RecordingAndReplaying.md promises: "`Authorization`, … never reach the file, …; nor does a
/// password in a URL (`https://user:password@host`)". The redactor hides a `Location`'s named
/// query items only (Redactor.redactHeader, `redirectURL` likewise); the password is hidden
/// there only when a next hop's URL carried it and a scrub found it. Not followed, it is
/// written in clear, in the header and in `redirectURL`.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingUnfollowedLocationPasswordAttackTests {
    @Test func aPasswordInALocationNotFollowedIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let password = "pw-\(UUID().uuidString)"
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/login", answers: .status(302, headers: ["Location": "https://ann:\(password)@shop.example/home"])))
        let configuration = APIConfiguration(validation: Validation.statusCodes(200..<400), retryPolicy: .never, redirectPolicy: .never)
        let api = try TestAPI(baseURL: "https://shop.example", configuration: configuration,
                              transport: RecordingTransport(file: file, mode: .record, upstream: stubs))
        let response: Response = try await api.request(route: api.get(endpoint: "/login")).value
        #expect(response.statusCode == 302)
        let written = try String(contentsOf: file, encoding: .utf8)
        let lines = written.split(separator: "\n").filter { $0.contains(password) }
        #expect(lines.isEmpty, "the password is in the recording: \(lines)")
    }
}
