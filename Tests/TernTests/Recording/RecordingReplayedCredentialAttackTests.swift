import Foundation
import Testing
import Tern
import TernTesting

/// A test signs in from its recording in `.missing` mode, and then makes a request the recording
/// lacks, signed with the token the replayed sign-in issued: `[redacted]`, as the file keeps it.
/// The request is not sent (no server takes that token, and its refusal, recorded, would answer
/// every later run): it fails at once with an ``UnmatchedRequest`` whose words name the header
/// and say to record again; the server hears nothing and the file is left as it was.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingReplayedCredentialAttackTests {
    struct Grant: Codable, Sendable { let accessToken: String
        enum CodingKeys: String, CodingKey { case accessToken = "access_token" } }

    @Test(arguments: [("Authorization", "Bearer "), ("Cookie", "sid=")])
    func aRequestSignedWithAReplayedTokenIsNotSent(header: String, prefix: String) async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let token = "at-\(UUID().uuidString)"
        let server = StubTransport()
        server.add(Stub(.get, "/**", answers: .status(401)))
        server.add(Stub(.post, "/login", answers: try .json(Grant(accessToken: token))))
        server.add(Stub(.get, "/notes/1", headers: [header: prefix + token], answers: .json("{}")))
        let signed = { (grant: Grant) in RequestOptions(headers: [header: prefix + grant.accessToken]) }

        let recording = try TestAPI(baseURL: "https://notes.example", transport: RecordingTransport(file: file, mode: .record, upstream: server))
        let grant: Grant = try await recording.request(route: recording.post(endpoint: "/login")).value
        let _: Data = try await recording.request(route: recording.get(endpoint: "/notes/1"), options: signed(grant)).value
        let written = try Data(contentsOf: file)
        let heard = server.requests.count

        let missing = try TestAPI(baseURL: "https://notes.example", transport: RecordingTransport(file: file, mode: .missing, upstream: server))
        let replayed: Grant = try await missing.request(route: missing.post(endpoint: "/login")).value
        #expect(replayed.accessToken == "[redacted]")
        await #expect {
            let _: Data = try await missing.request(route: missing.get(endpoint: "/notes/2"), options: signed(replayed)).value
        } throws: { error in
            guard case .transportFailed(let failure)? = error as? APIError, let unmatched = failure.underlying as? UnmatchedRequest else {
                Issue.record("failed otherwise: \(error)")
                return false
            }
            let words = "\(unmatched)"
            return words.contains("GET /notes/2") && words.contains("its \(header) holds [redacted]") && words.contains("TERN_RECORDING=record")
        }
        #expect(server.requests.count == heard, "the request signed with the placeholder reached the server")
        #expect(try Data(contentsOf: file) == written, "the recording changed")
    }
}
