import Foundation
import Testing
import Tern
import TernTesting

/// A token refresh recorded with the default options, naming no secret: the refresh token the
/// app sends in the refresh's body, and the tokens the answer issues (a rotated refresh token
/// is never sent as a header, so nothing else would hide it), stay out of the file; the
/// refresh replays, and the app reads `[redacted]` where they were.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingRefreshSecretAttackTests {
    struct Grant: Codable, Sendable, Equatable {
        let accessToken: String
        let refreshToken: String
        let idToken: String
        enum CodingKeys: String, CodingKey { case accessToken = "access_token", refreshToken = "refresh_token", idToken = "id_token" }
    }

    /// OAuth 2's grant, as a form (RFC 6749) and as JSON, answered with a new access token, a
    /// rotated refresh token and an OpenID ID token.
    @Test(arguments: [false, true])
    func aRefreshsTokensAreHiddenWithNoSecretNamed(json: Bool) async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let sent = (refresh: "rt-\(UUID().uuidString)", secret: "cs-\(UUID().uuidString)", password: "pw-\(UUID().uuidString)")
        let issued = Grant(accessToken: "at-\(UUID().uuidString)", refreshToken: "rt-\(UUID().uuidString)", idToken: "id-\(UUID().uuidString)")
        let stubs = StubTransport()
        stubs.add(Stub(.post, "/token", answers: try .json(issued)))
        let grant = { (refresh: String, secret: String, password: String) -> any RequestParameters in
            let fields = ["grant_type": "refresh_token", "refresh_token": refresh, "client_id": "shop", "client_secret": secret, "password": password]
            return json ? JSONParameters(fields) : FormParameters(fields)
        }
        let recording = try TestAPI(baseURL: "https://auth.example", transport: RecordingTransport(file: file, mode: .record, upstream: stubs))
        let recorded: Grant = try await recording.request(route: recording.post(endpoint: "/token"), parameters: grant(sent.refresh, sent.secret, sent.password)).value
        #expect(recorded == issued)
        let written = try String(contentsOf: file, encoding: .utf8)
        for (name, secret) in [("refresh token sent", sent.refresh), ("client secret", sent.secret), ("password", sent.password),
                               ("access token issued", issued.accessToken), ("refresh token issued", issued.refreshToken), ("ID token", issued.idToken)] {
            #expect(!written.contains(secret), "the \(name) is in the recording")
        }

        let replaying = try TestAPI(baseURL: "https://auth.example",
                                    transport: RecordingTransport(file: file, mode: .replay, options: RecordingOptions(matchesBody: true)))
        let replayed: Grant = try await replaying.request(route: replaying.post(endpoint: "/token"), parameters: grant("rt-other", "cs-other", "pw-other")).value
        #expect(replayed == Grant(accessToken: "[redacted]", refreshToken: "[redacted]", idToken: "[redacted]"))
    }
}
