#if os(Linux)
import Foundation
import FoundationNetworking
import Testing
import Tern
import TernTesting

/// The TLS test servers (an HTTP/2 one offering h2 by ALPN, and an HTTP/1.1 one) over the
/// transports trusting the system's authorities, which never signed the test authority's
/// certificate: URLSession on Linux cannot be given the test authority (nor check pins: those
/// requests fail as `pinningFailed(.transportCannotPin)`, which CertificatePinningTests holds),
/// so this is the path the TLS + pin scripts take over it. Held to Security.md: "A certificate
/// even from those must name the host … each refused before a byte is sent
/// (`serverCertificateUntrusted`, `serverCertificateHasBadDate`)", and "every promise settles
/// exactly once with a typed APIError that says what went wrong". Over URLSessionTransport the
/// refusal was `.transportFailed` with `URLError.unknown` (-1, "SSL certificate problem: unable
/// to get local issuer certificate"), a code a caller cannot tell from any other failure; it is
/// now read from libcurl's words (`CurlCode.certificateRefusal(in:)`).
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct URLSessionUntrustedAttackTests {
    @Test(arguments: ["curl", "urlsession"], [true, false]) func anUntrustedCertificateIsRefusedAsUntrusted(transport: String, http2: Bool) async throws {
        let scripted = http2 ? try ScriptedHTTP2Server { request, connection in connection.answer(request.stream) } : nil
        let plain = http2 ? nil : try CertificatePinningTests.RelayingServer()
        let url = (scripted?.url ?? plain?.url ?? "") + "/secret"
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never),
                              transport: transport == "curl" ? try CurlTransport() : URLSessionTransport(), responseQueue: .global())
        let result = await (api.request(route: .get(url)) as Promise<Response>).result
        guard case .failure(APIError.transportFailed(let failure)) = result else {
            Issue.record("\(transport): not transportFailed: \(result)")
            return
        }
        #expect((failure.underlying as? URLError)?.code == .serverCertificateUntrusted, "\(transport), http2 \(http2): \(failure)")
        // The first thing a private authority meets says where to trust one.
        #expect((failure.underlying as? URLError)?.localizedDescription.contains("CurlTransport(trusting:)") == true, "\(failure)")
        #expect(scripted?.connections ?? 0 == 0)
        #expect(plain?.requestBytes ?? 0 == 0)
    }
}
#endif
