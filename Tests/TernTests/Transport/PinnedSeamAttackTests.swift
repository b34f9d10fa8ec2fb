#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if os(Linux)
import Foundation
import Testing
@testable import Tern
import TernTesting

/// Certificate pins where they meet streams and event sources, against a TLS relay
/// over a test CA: a wrong pin stops each before any byte of the request is sent.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct PinnedSeamAttackTests {
    typealias Server = CertificatePinningTests.RelayingServer

    func api(_ server: Server, pin: String) throws -> AbstractAPI {
        try CertificatePinningTests.api(["127.0.0.1": [pin]], transport: try CurlTransport(trusting: server.certificates.authority),
                                        configuration: APIConfiguration(timeout: 10, retryPolicy: .never))
    }

    @Test func aStreamToAPinnedHostWithAWrongPinSendsNothing() async throws {
        let server = try Server()
        let api = try api(server, pin: CertificatePinningTests.wrongPin)
        let stream = api.stream(route: .get(server.url + "/stream"))
        let result = await stream.response.result
        guard case .failure(APIError.pinningFailed) = result else { Issue.record("expected pinningFailed, got \(result)"); return }
        #expect(server.requestBytes == 0)
        let right = try self.api(server, pin: try server.serverPin)
        var bytes = Data()
        for try await chunk in right.stream(route: .get(server.url + "/open")) { bytes += chunk }
        #expect(String(decoding: bytes, as: UTF8.self) == "open")
    }

    /// An event source refused by its pins ends with that error, at once: it does not come back.
    @Test func anEventSourceToAPinnedHostWithAWrongPinEndsAtOnce() async throws {
        let server = try Server()
        let api = try api(server, pin: CertificatePinningTests.wrongPin)
        var iterator = api.events(route: .get(server.url + "/events"), reconnection: EventReconnection(delay: 0)).makeAsyncIterator()
        do {
            _ = try await iterator.next()
            Issue.record("an event came")
        } catch APIError.pinningFailed {
        } catch {
            Issue.record("expected pinningFailed, got \(error)")
        }
        #expect(server.requestBytes == 0)
    }
}
#endif
