import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An answer that is a multipart form (a sign-in endpoint answering `multipart/form-data`, as
/// some form-based services do), one of its parts named `access_token`. RecordingAndReplaying.md
/// promises: "`Authorization`, … never reach the file, nor do the values of …, named or not,
/// of OAuth's and OpenID's `access_token`, …: a header, a query item, a form field or a JSON
/// member at any depth (…), a part of a multipart form, in requests and responses". The
/// redactor reads multipart bodies of requests only: the answer is kept as Base64 with the
/// token's bytes in it, in clear once decoded.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingMultipartAnswerAttackTests {
    @Test func aSecretPartOfAMultipartAnswerIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let token = "tok-\(UUID().uuidString)"
        let boundary = "tern-boundary-42"
        let body = "--\(boundary)\r\nContent-Disposition: form-data; name=\"user\"\r\n\r\nann\r\n"
            + "--\(boundary)\r\nContent-Disposition: form-data; name=\"access_token\"\r\n\r\n\(token)\r\n--\(boundary)--\r\n"
        let server = try LoopbackServer { _ in
            ServerResponse(status: 200, headers: ["Content-Type": "multipart/form-data; boundary=\(boundary)"], body: Data(body.utf8))
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()))
        let received: Data = try await api.request(route: api.post(endpoint: "/session")).value
        #expect(String(decoding: received, as: UTF8.self).contains(token), "the app did not get the token")
        let text = try String(contentsOf: file, encoding: .utf8)
        let contents = try recordedEntries(in: file).compactMap { (($0["response"] as? [String: Any])?["content"] as? [String: Any])?["text"] as? String }
        let decoded = contents.map { Data(base64Encoded: $0).map { String(decoding: $0, as: UTF8.self) } ?? $0 }.joined()
        #expect(decoded.contains("ann"), "the answer is not in the recording")
        #expect(!text.contains(token) && !decoded.contains(token), "the token is in the recording: \(decoded)")
    }
}
