#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// Pins meeting HTTP/2's multiplexing: one `CurlTransport` shared by an API without pins and
/// one pinned to a key the server does not hold. Security.md: "a request to a pinned host goes
/// out only once its server's certificate has shown one of the host's keys … a connection
/// opened without the same pins is never reused for it." `CertificatePinningTests` holds that
/// for an idle HTTP/1 connection; here the unpinned request's HTTP/2 connection is still busy
/// (its answer not yet come), so the pinned request could only join it as another stream.
///
/// Over libcurl whatever `TERN_TEST_TRANSPORT` says (HTTP/2 over the test authority).
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct HTTP2PinnedMultiplexAttackTests {
    @Test(arguments: [false, true], [false, true])
    func aPinnedRequestNeverJoinsAnUnpinnedHTTP2Connection(stream: Bool, holderPinned: Bool) async throws {
        // The first request is never answered: its connection stays open and busy.
        let server = try HTTP2Server(answering: Data(#"{"ok":true}"#.utf8), misbehaving: [1: .silence])
        let transport = try CurlTransport(trusting: server.certificates.authority)
        let holderPins = holderPinned ? ["127.0.0.1": [try server.certificates.pin(ofKey: "server.key")]] : nil
        let unpinned = try CertificatePinningTests.api(holderPins, transport: transport, configuration: APIConfiguration(timeout: 30, retryPolicy: .never))
        let held = stream
            ? Task.onTestThreads { _ = try? await unpinned.stream(route: .get(server.url + "/held")).first { _ in true } }
            : Task.onTestThreads { _ = await (unpinned.request(route: .get(server.url + "/held")) as Promise<Data>).result }
        defer { held.cancel() }
        for _ in 0..<200 where server.requests.isEmpty { try await Task.sleep(for: .milliseconds(25)) }
        try #require(server.requests.count == 1, "the held request never reached the server")
        let pinned = try CertificatePinningTests.api(["127.0.0.1": [CertificatePinningTests.wrongPin]], transport: transport,
                                                     configuration: APIConfiguration(timeout: 10, retryPolicy: .never))
        let result = await (pinned.request(route: .get(server.url + "/pinned")) as Promise<Data>).result
        guard case .failure(APIError.pinningFailed) = result else {
            Issue.record("expected pinningFailed, got \(result)")
            return
        }
        #expect(server.requests.count == 1, "the pinned request reached the server")
    }
}
#endif
