import Foundation
import Testing
import Tern
import TernTesting

/// Credentials a URL carries, where a recording could let them through: a key sent as the URL's
/// user (`https://sk_live_…@host`, `https://key:@host`, as Stripe and GitHub take them), and the
/// words of the error a response too long to record fails with, which a CI log keeps.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingURLCredentialAttackTests {
    /// A key as the URL's user, with no password or an empty one: hidden in the file as a
    /// password is, and replayed to a request with another key.
    @Test(arguments: ["@", ":@"])
    func aKeySentAsTheURLsUserIsHidden(separator: String) async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let key = "sk_live_\(UUID().uuidString)"
        let server = try LoopbackServer { _ in .json(#"{"name": "tern", "price": 1}"#) }
        let withKey = { (key: String) in server.baseURL.replacingOccurrences(of: "://", with: "://\(key)\(separator)") }
        let api = try TestAPI(baseURL: withKey(key), transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()))
        let recorded: Product = try await api.request(route: api.get(endpoint: "/charges")).value
        server.stop()
        let written = try String(contentsOf: file, encoding: .utf8)
        #expect(!written.contains(key), "the key is in the recording: \(written)")

        let replaying = try TestAPI(baseURL: withKey("sk_live_another"), transport: RecordingTransport(file: file, mode: .replay))
        #expect(try await replaying.request(route: replaying.get(endpoint: "/charges")).value == recorded)
    }

    /// A response longer than a recording keeps fails the request, its words naming the
    /// request: with its named query item and the password in its URL hidden, as an unmatched
    /// request's words hide them (a CI log keeps them).
    @Test func anAnswerTooLongToRecordTellsNoSecretOfItsRequest() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let token = "tok-\(UUID().uuidString)", password = "pw-\(UUID().uuidString)"
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/**", answers: .status(200, headers: ["Content-Type": "application/octet-stream"], body: Data(count: (64 << 20) + 1))))
        let api = try TestAPI(baseURL: "https://ann:\(password)@shop.example", configuration: APIConfiguration(maximumResponseSize: .unlimited, retryPolicy: .never),
                              transport: RecordingTransport(file: file, mode: .record, upstream: stubs, options: RecordingOptions(secrets: ["access_token"])))
        let result = await (api.request(route: api.get(endpoint: "/export?access_token=\(token)")) as Promise<Data>).result
        guard case .failure(let error) = result else {
            Issue.record("a response longer than a recording keeps was recorded")
            return
        }
        // The pipeline's own words name the query as the API was given it (it names no secret);
        // the recording's, under them, know the secrets it hides.
        let words = "\((error as? APIError)?.underlyingError.map { "\($0)" } ?? "")"
        #expect(words.contains("/export"), "the words do not name the request: \(words)")
        #expect(!words.contains(token) && !words.contains(password), "the words tell a secret: \(words)")
        #expect(!"\(error)".contains(password), "the words tell the password: \(error)")
    }

    /// A redirect whose `Location` carries a password (a sign-in handing the app a URL with
    /// its credential in it): hidden in the redirect's entry too, not only in the next hop's.
    @Test func aPasswordInARedirectsLocationIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let password = "pw-\(UUID().uuidString)"
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/login", answers: .status(302, headers: ["Location": "https://ann:\(password)@shop.example/home"])))
        stubs.add(Stub(.get, "/home", answers: .json(#"{"name": "tern", "price": 2}"#)))
        let api = try TestAPI(baseURL: "https://shop.example", transport: RecordingTransport(file: file, mode: .record, upstream: stubs))
        let recorded: Product = try await api.request(route: api.get(endpoint: "/login")).value
        let written = try String(contentsOf: file, encoding: .utf8)
        #expect(!written.contains(password), "the password is in the recording: \(written)")

        let replaying = try TestAPI(baseURL: "https://shop.example", transport: RecordingTransport(file: file, mode: .replay))
        #expect(try await replaying.request(route: replaying.get(endpoint: "/login")).value == recorded)
    }
}
