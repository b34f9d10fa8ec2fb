#if os(Linux)
import Foundation
import Testing
import Tern

/// TLS over libcurl against a local HTTPS server (`openssl s_server`) with a certificate from a
/// test CA made for the run: trusted when the transport is told the CA, refused otherwise.
@Suite(.timeLimit(.minutes(1))) struct CurlTLSTests {
    /// `openssl s_server` answering with its status page, over a certificate of a test CA.
    final class HTTPSServer: Sendable {
        let certificates: TestCertificates
        let port: Int
        let process: Process

        init() throws {
            certificates = try TestCertificates()
            port = try TestCertificates.freePort()
            process = try certificates.server(on: port, ["-www"])
        }

        deinit {
            stopServer(process)
        }

        var url: String { "https://127.0.0.1:\(port)/" }
        var authority: URL { certificates.authority }
    }

    /// The status page, once the server listens.
    func get(_ server: HTTPSServer, over transport: CurlTransport) async -> Result<String, any Error> {
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: transport, responseQueue: .global())
        for _ in 0..<100 {
            let result = await (api.request(route: .get(server.url)) as Promise<String>).result
            // Not listening yet: the key pair and s_server take a moment.
            if case .failure(APIError.transportFailed(let failure)) = result, failure.urlError?.code == .cannotConnectToHost {
                try? await Task.sleep(nanoseconds: 50_000_000)
                continue
            }
            return result
        }
        return .failure(TestError())
    }

    @Test func aPeerSignedByTheTrustedAuthorityIsAccepted() async throws {
        let server = try HTTPSServer()
        let page = try await get(server, over: try CurlTransport(trusting: server.authority)).get()
        #expect(page.contains("s_server"))
    }

    @Test func aPeerTheSystemDoesNotTrustFailsWithATypedError() async throws {
        let server = try HTTPSServer()
        let result = await get(server, over: try CurlTransport())
        guard case .failure(APIError.transportFailed(let failure)) = result else {
            Issue.record("expected transportFailed, got \(result)")
            return
        }
        #expect(failure.urlError?.code == .serverCertificateUntrusted)
        #expect("\(failure)".contains("certificate"))
    }
}
#endif
