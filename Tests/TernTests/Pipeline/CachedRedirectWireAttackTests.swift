#if os(Linux)
import Foundation
import Testing
@testable import Tern
import TernTesting

/// Redirects the cache keeps and answers again, from raw-socket servers: a kept `301` from
/// https to http (refused by default, and when allowed, its credentials and `Secure` cookies stay
/// behind each time), a kept `301` to a `file:` or `ftp:` URL, a loop of kept redirects that the
/// cache alone would go round for ever. Every request settles once, typed, from the cache as
/// from the wire.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CachedRedirectWireAttackTests {
    /// A server answering `/moved` with a permanent redirect to `location` that may be kept for
    /// ten minutes (`public`: a request with credentials may be answered from it too), `/a` and
    /// `/b` with kept redirects to each other, and anything else with its name; it keeps each
    /// request's head.
    static func server(location: @escaping @Sendable () -> String = { "/" }, requests: Recorder<String>) throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                requests.append(request)
                let name = ConnectionReuseTests.name(of: request)
                let kept = "Cache-Control: public, max-age=600\r\n"
                switch name {
                case "moved": connection.send(RawServer.Connection.response("", status: "301 Moved Permanently", headers: "Location: \(location())\r\n" + kept))
                case "a": connection.send(RawServer.Connection.response("", status: "308 Permanent Redirect", headers: "Location: /b\r\n" + kept))
                case "b": connection.send(RawServer.Connection.response("", status: "301 Moved Permanently", headers: "Location: /a\r\n" + kept))
                default: connection.send(RawServer.Connection.response(name))
                }
            }
        }
    }

    /// Kept redirects to a URL Tern does not follow: the first, from the wire, and the next two,
    /// from the cache, fail alike, the `Location` named; nothing is read from the file.
    @Test(arguments: ["file:///etc/passwd", "ftp://127.0.0.1:1/file", "http:/moved", "//"])
    func aKeptRedirectToNoHTTPURLFailsEachTime(location: String) async throws {
        let requests = Recorder<String>()
        let server = try Self.server(location: { location }, requests: requests)
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, cache: HTTPCache()), transport: TestTransport.make(),
                              responseQueue: .global())
        for round in 0..<3 {
            let result = await (api.request(route: .get(server.baseURL + "/moved")) as Promise<Data>).result
            guard case .failure(APIError.redirectFailed(let failure)) = result else {
                Issue.record("round \(round): expected redirectFailed, got \(result)")
                continue
            }
            #expect(failure.reason == .invalidLocation || failure.reason == .tooManyRedirects(limit: 10), "\(failure)")
            #expect(failure.statusCode == 301)
        }
        #expect(requests.items.filter { $0.hasPrefix("GET /moved ") }.count == 1, "the 301 was not kept")
    }

    /// Two redirects that point at each other, both kept: the first request goes to the server
    /// twice and round the cache until the limit, and the next is answered by the cache alone;
    /// each fails at the limit, typed, and neither hangs.
    @Test func aLoopOfKeptRedirectsStopsAtTheLimit() async throws {
        let requests = Recorder<String>()
        let server = try Self.server(requests: requests)
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, redirectPolicy: RedirectPolicy(maximumRedirects: 6), cache: HTTPCache()),
                              transport: TestTransport.make(), responseQueue: .global())
        for _ in 0..<2 {
            let result = await (api.request(route: .get(server.baseURL + "/a")) as Promise<Data>).result
            guard case .failure(APIError.redirectFailed(let failure)) = result else {
                Issue.record("expected redirectFailed, got \(result)")
                continue
            }
            #expect(failure.reason == .tooManyRedirects(limit: 6))
        }
        #expect(requests.items.count == 2, "\(requests.items.map { $0.prefix(12) })")
    }

    /// A kept `301` from https to http: refused each time by default, the http server asked
    /// nothing; when allowed, each hop there carries neither the `Authorization` nor a cookie
    /// set `Secure`, from the wire or from the cache.
    @Test(.enabled(if: TestTransport.isCurl, "FoundationNetworking cannot be told to trust the test's authority"), arguments: [false, true])
    func aKeptRedirectFromHTTPSToHTTP(allowed: Bool) async throws {
        let plainRequests = Recorder<String>()
        let plain = try Self.server(requests: plainRequests)
        defer { plain.stop() }
        let secureRequests = Recorder<String>()
        let secure = try Self.server(location: { "http://127.0.0.1:\(plain.port)/landed" }, requests: secureRequests)
        defer { secure.stop() }
        let certificates = try TestCertificates()
        let relay = try TLSRelay(certificates: certificates, to: secure.port)
        defer { relay.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(commonHeaders: ["Authorization": "Bearer secret"], timeout: 30, retryPolicy: .never,
                                                              redirectPolicy: RedirectPolicy(allowsInsecureRedirects: allowed), cache: HTTPCache()),
                              transport: try CurlTransport(trusting: certificates.authority), responseQueue: .global())
        api.cookieJar?.setCookies(from: ["secure=1; Secure; Path=/", "plain=1; Path=/"], for: try #require(URL(string: relay.baseURL)))
        for round in 0..<3 {
            let result = await (api.request(route: .get(relay.baseURL + "/moved")) as Promise<String>).result
            if allowed {
                #expect((try? result.get()) == "landed", "round \(round): \(result)")
            } else {
                guard case .failure(APIError.redirectFailed(let failure)) = result else {
                    Issue.record("round \(round): expected redirectFailed, got \(result)")
                    continue
                }
                #expect(failure.reason == .insecureRedirect)
            }
        }
        #expect(secureRequests.items.count == 1)
        let landed = plainRequests.items
        #expect(landed.count == (allowed ? 3 : 0))
        for request in landed {
            let lower = request.lowercased()
            #expect(!lower.contains("authorization") && !lower.contains("secure=1") && !lower.contains("secret"), "\(request)")
        }
    }
}
#endif
