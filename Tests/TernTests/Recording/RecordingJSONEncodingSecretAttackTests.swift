import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A token answer that is JSON, but not UTF-8: UTF-16 (which `JSONDecoder` reads, and so the
/// app decodes the token), or Latin-1 with a letter beyond ASCII in another member (its charset
/// named, as legacy servers answer). RecordingAndReplaying.md promises:
/// "`Authorization`, … never reach the file, nor do the values of …, named or not, of OAuth's
/// and OpenID's `access_token`, …: a header, a query item, a form field or a JSON member at any
/// depth …". The redactor reads a body as JSON only when it was kept as UTF-8 text; the others
/// are kept as Base64 with the token's bytes in them, which whoever decodes the file reads (in
/// UTF-16 they are not even the bytes a later scrub of a remembered value would search for).
/// (UTF-8 behind a byte order mark is read and hidden: it holds.)
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingJSONEncodingSecretAttackTests {
    struct Issued: Decodable { let access_token: String }

    static func body(_ encoding: String, token: String) -> (type: String, bytes: Data) {
        let json = #"{"user": "Zoë", "access_token": "\#(token)", "expires_in": 60}"#
        switch encoding {
        case "utf-16": return ("application/json; charset=utf-16", json.data(using: .utf16)!)
        default: return ("application/json; charset=iso-8859-1", json.data(using: .isoLatin1)!)
        }
    }

    @Test(arguments: ["utf-16", "latin-1"])
    func aTokenInJSONNotPlainUTF8IsHidden(encoding: String) async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let token = "tok-\(UUID().uuidString)"
        let (type, bytes) = Self.body(encoding, token: token)
        let server = try LoopbackServer { _ in ServerResponse(status: 200, headers: ["Content-Type": type], body: bytes) }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()))
        let received: Data = try await api.request(route: api.post(endpoint: "/token")).value
        #expect(received == bytes)
        if encoding != "latin-1" { #expect((try? JSONDecoder().decode(Issued.self, from: received))?.access_token == token) }
        let contents = try recordedEntries(in: file).compactMap { (($0["response"] as? [String: Any])?["content"] as? [String: Any]) }
        let decoded = contents.compactMap { content -> Data? in
            guard let text = content["text"] as? String else { return nil }
            return content["encoding"] as? String == "base64" ? Data(base64Encoded: text) : Data(text.utf8)
        }
        let readable = decoded.map { String(data: $0, encoding: encoding == "utf-16" ? .utf16 : .isoLatin1) ?? "" }
        #expect(readable.contains { $0.contains("expires_in") }, "the answer is not in the recording")
        #expect(!readable.contains { $0.contains(token) }, "the token is in the recording: \(readable)")
    }
}
