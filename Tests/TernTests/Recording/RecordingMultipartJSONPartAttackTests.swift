import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A multipart upload whose metadata goes as a JSON part (as Google Drive's and S3-style
/// uploads take it), a well-known secret a member of that JSON. RecordingAndReplaying.md
/// promises: "`Authorization`, … never reach the file, nor do the values of …, named or not,
/// of OAuth's and OpenID's `access_token`, … `client_secret` … and of `password` …: a header,
/// a query item, a form field or a JSON member at any depth (…), a part of a multipart form,
/// in requests and responses", and for matching reads a multipart body "each part typed JSON
/// as values". The redactor hides a part only by the part's own name: the JSON part's members
/// are never read, and the secrets are kept in the Base64 body, in clear once decoded.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingMultipartJSONPartAttackTests {
    @Test func aSecretMemberOfAJSONPartIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let (password, secret) = ("pw-\(UUID().uuidString)", "cs-\(UUID().uuidString)")
        let server = try LoopbackServer { _ in .json(#"{"name": "tern", "price": 1}"#) }
        defer { server.stop() }
        let metadata = Data(#"{"title": "report", "owner": {"user": "ann", "password": "\#(password)"}, "client_secret": "\#(secret)"}"#.utf8)
        let form = MultipartParameters(parts: [Part(name: "metadata", data: metadata, mimeType: "application/json"),
                                               Part(name: "file", data: Data("a tern".utf8), filename: "report.txt", mimeType: "text/plain")])
        let api = try TestAPI(baseURL: server.baseURL, transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()))
        let _: Product = try await api.request(route: api.post(endpoint: "/upload"), parameters: form).value
        let text = try String(contentsOf: file, encoding: .utf8)
        let bodies = try recordedEntries(in: file).compactMap { (($0["request"] as? [String: Any])?["postData"] as? [String: Any])?["text"] as? String }
        let decoded = bodies.compactMap { Data(base64Encoded: $0).map { String(decoding: $0, as: UTF8.self) } }.joined()
        #expect(decoded.contains("report.txt"), "the multipart body is not in the recording")
        for value in [password, secret] {
            #expect(!text.contains(value) && !decoded.contains(value), "\(value) is in the recording: \(decoded)")
        }
        // Hidden in place: the same form, its secrets included, is answered on replay.
        let replaying = try TestAPI(baseURL: server.baseURL, transport: RecordingTransport(file: file, mode: .replay))
        let replayed: Product = try await replaying.request(route: replaying.post(endpoint: "/upload"), parameters: form).value
        #expect(replayed.name == "tern")
    }
}
