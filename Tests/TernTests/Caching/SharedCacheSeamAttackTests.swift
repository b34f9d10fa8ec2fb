import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One cache and one cookie jar shared by APIs whose pins differ, across a redirect between
/// two names of one HTTPS server.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct SharedCacheSeamAttackTests {
    static let wrongPin = "sha256/" + Data(repeating: 9, count: 32).base64EncodedString()

    #if os(Linux)
    /// An HTTPS server known as 127.0.0.1 and as localhost: `/start` redirects for good (kept
    /// ten minutes) to `/data` on localhost, each setting a cookie; `/data` names the cookies it
    /// was sent and its number.
    final class TwoNames: Sendable {
        let certificates: TestCertificates
        let origin: HTTPCacheTests.Origin
        let relay: TLSRelay

        init() throws {
            let certificates = try TestCertificates(names: "IP:127.0.0.1,DNS:localhost")
            self.certificates = certificates
            let port = Recorder<Int>()
            origin = try HTTPCacheTests.Origin { request, number in
                let cookies = request.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("cookie:") } ?? "no cookie"
                if request.hasPrefix("GET /start") {
                    return "HTTP/1.1 301 Moved Permanently\r\nLocation: https://localhost:\(port.items.last ?? 0)/data\r\n"
                        + "Cache-Control: max-age=600\r\nSet-Cookie: chain=1; Path=/\r\nContent-Length: 0\r\n\r\n"
                }
                return HTTPCacheTests.answer("data \(number) with \(cookies)", "Cache-Control: max-age=600\r\nSet-Cookie: session=abc; Path=/\r\n")
            }
            relay = try TLSRelay(certificates: certificates, to: origin.server.port)
            port.append(relay.port)
        }

        deinit { relay.stop() }
    }

    /// An unpinned API follows `/start` to `/data` on localhost and keeps both hops, setting
    /// both cookies in the shared jar. An API that pins localhost to a key the server does not
    /// have, on the same cache and jar, is answered the kept redirect (127.0.0.1 it does not
    /// pin) and then refused at localhost with `pinningFailed`, sending nothing there: never the
    /// kept `/data`. Pinned to the right key, it gets `/data` from the server (not what was kept
    /// without pins), sending no cookie off the chain's first origin, and then from the cache.
    @Test(.enabled(if: TestTransport.isCurl, "URLSession on Linux cannot check pins"))
    func apisPinnedDifferentlyShareACacheAndAJarAcrossARedirect() async throws {
        let server = try TwoNames()
        let (cache, jar) = (HTTPCache(), CookieJar())
        let transport = try CurlTransport(trusting: server.certificates.authority)
        func api(pins: [String]?) throws -> AbstractAPI {
            AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, cookies: .shared(jar),
                                                        certificatePins: try pins.map { try CertificatePins(["localhost": $0]) }, cache: cache),
                        transport: transport, responseQueue: .global())
        }
        let start = server.relay.baseURL + "/start"
        let open = try api(pins: nil)
        let first: Response = try await open.request(route: .get(start)).value
        #expect(String(decoding: first.body, as: UTF8.self) == "data 1 with no cookie")
        #expect(Set(jar.all.map(\.name)) == ["chain", "session"])
        let asked = server.origin.count

        let wrong = try api(pins: [Self.wrongPin])
        let refused = await (wrong.request(route: .get(start)) as Promise<Response>).result
        guard case .failure(APIError.pinningFailed) = refused else {
            Issue.record("expected pinningFailed, got \(refused)")
            return
        }
        #expect(server.origin.count == asked, "\(server.origin.requests.items)")

        let right = try api(pins: [try server.certificates.pin(ofKey: "server.key")])
        let fetched: Response = try await right.request(route: .get(start)).value
        // A chain sends no cookie once it has left its first origin (see RedirectOriginSeamTests).
        #expect(String(decoding: fetched.body, as: UTF8.self) == "data \(asked) with no cookie")
        let kept: Response = try await right.request(route: .get(start)).value
        #expect(kept.cacheOutcome == .hit && kept.body == fetched.body)
        #expect(server.origin.count == asked + 1)
        #expect(!server.origin.requests.items.contains { $0.hasPrefix("GET /data") && $0.contains("chain=1") })
    }
    #endif
}
