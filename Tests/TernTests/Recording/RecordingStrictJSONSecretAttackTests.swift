import Foundation
import Testing
import Tern
import TernTesting

/// Token answers that are JSON by RFC 8259's grammar but that Foundation's `JSONSerialization`
/// (which the recording's redactor reads bodies with) refuses: a string holding a lone
/// surrogate escape (`"\ud83d"`, what JavaScript's `JSON.stringify` and Python's `json.dumps`
/// write for an emoji cut in half), and a number past `Double`'s range (`1e400`). The grammar
/// takes both (RFC 8259, sections 6 and 8.2), and Tern's own parser decodes the tokens the app
/// reads from them: the app signs in.
///
/// RecordingAndReplaying.md promises: "`Authorization`, ... never reach the file, nor ..., named
/// or not, of OAuth's and OpenID's `access_token`, `refresh_token`, `id_token`, ... in any case
/// ...: ... a JSON member at any depth". The redactor (`Redactor.redactBody`) reads the body
/// with `JSONSerialization`, which throws; it falls back to reading it a line at a time, which
/// throws again, and keeps the body as it came: the refresh token and the ID token, never sent
/// again as a header or a field (so never searched for afterwards), are written to the file in
/// the clear.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingStrictJSONSecretAttackTests {
    /// The JSON that follows the tokens in each answer.
    static let cases: [String] = [
        #""name": "Ana \ud83d""#,
        #""expires_in": 3600, "score": 1e400"#,
    ]

    struct Tokens: Decodable, Sendable {
        let refresh_token: String
    }

    @Test(arguments: cases) func aTokenAnswerJSONSerializationRefusesHidesItsTokens(rest: String) async throws {
        let refreshToken = "rt_\(UUID().uuidString)"
        let idToken = "idt_\(UUID().uuidString)"
        let server = try LoopbackServer { _ in
            .json(#"{"access_token": "at_\#(UUID().uuidString)", "refresh_token": "\#(refreshToken)", "id_token": "\#(idToken)", \#(rest)}"#)
        }
        defer { server.stop() }
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let api = try TestAPI(baseURL: server.baseURL, parser: JSONParser(), transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()))
        let form = FormParameters(["grant_type": "password", "username": "ana", "password": "correct horse battery staple"] as [String: any Sendable])
        // The app signs in: Tern's parser reads the members it decodes, past the one it does not.
        let tokens: Tokens = try await api.request(route: .post(server.baseURL + "/oauth/token"), parameters: form).value
        #expect(tokens.refresh_token == refreshToken)
        let written = try String(contentsOf: file, encoding: .utf8)
        #expect(!written.contains(refreshToken), "the refresh token is in the recording: \(written)")
        #expect(!written.contains(idToken), "the ID token is in the recording")
        #expect(!written.contains("correct horse"), "the password is in the recording")
    }
}
