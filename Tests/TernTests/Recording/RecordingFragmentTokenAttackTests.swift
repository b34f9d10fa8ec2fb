import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// OAuth 2's implicit grant (RFC 6749 §4.2.2) hands the app its token in a redirect's
/// `Location`, in the fragment, as a form writes it: `/cb#access_token=…&token_type=bearer`.
/// RecordingAndReplaying.md promises: "`Authorization`, … never reach the file, nor do the
/// values of …, named or not, of OAuth's and OpenID's `access_token`, `refresh_token`,
/// `id_token` … (a header, a query item, a form field or a JSON member at any depth …)".
/// The redactor hides only the query of a `Location` (and of the URL): the token in the
/// fragment is written to the file as it came, in the `Location` header and in `redirectURL`.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingFragmentTokenAttackTests {
    @Test func anAccessTokenInARedirectsFragmentIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let token = "tok-\(UUID().uuidString)"
        let server = try LoopbackServer { request in
            request.path == "/authorize"
                ? ServerResponse(status: 302, headers: ["Location": "/cb#access_token=\(token)&token_type=bearer&expires_in=3600"])
                : .json(#"{"name": "tern", "price": 1}"#)
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()))
        let _: Product = try await api.request(route: api.get(endpoint: "/authorize")).value
        let written = try String(contentsOf: file, encoding: .utf8)
        let lines = written.split(separator: "\n").filter { $0.contains(token) }
        #expect(lines.isEmpty, "the access token is in the recording: \(lines)")
        // The recording still answers the same redirect, its token hidden.
        let replaying = try TestAPI(baseURL: server.baseURL, transport: RecordingTransport(file: file, mode: .replay))
        let replayed: Product = try await replaying.request(route: replaying.get(endpoint: "/authorize")).value
        #expect(replayed.name == "tern")
    }
}
