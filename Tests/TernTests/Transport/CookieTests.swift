import Foundation
import Testing
@testable import Tern
import TernTesting

/// Cookies are kept as URLSession keeps them, on either transport: set from responses (each
/// `Set-Cookie` on its own), sent back to the host that set them, and to no other.
@Suite struct CookieTests {
    /// A cookie storage of its own for each test, kept in memory only.
    static func storage() throws -> HTTPCookieStorage {
        try #require(URLSessionConfiguration.ephemeral.httpCookieStorage)
    }

    @Test func cookiesSetByAResponseGoBackWithTheNextRequest() async throws {
        let cookies = Recorder<String?>()
        let server = try LoopbackServer { request in
            guard request.path == "/login" else {
                cookies.append(request.headers["Cookie"])
                return .json("{}")
            }
            var response = ServerResponse.json("{}")
            // Two fields, one with a date whose comma a joined header would make ambiguous.
            response.repeatedFields = [("Set-Cookie", "session=abc; Path=/; HttpOnly"),
                                       ("Set-Cookie", "theme=dark; Path=/; Expires=Wed, 21 Oct 2099 07:28:00 GMT")]
            return response
        }
        defer { server.stop() }
        let storage = try Self.storage()
        let api = try TestAPI(baseURL: server.baseURL, transport: TestTransport.make(keepingCookiesIn: storage))
        try await (api.request(route: api.post(endpoint: "/login")) as Promise<Void>).value
        #expect(Set(storage.cookies?.map { "\($0.name)=\($0.value)" } ?? []) == ["session=abc", "theme=dark"])

        try await (api.request(route: api.get(endpoint: "/me")) as Promise<Void>).value
        let sent = try #require(cookies.items.first ?? nil)
        #expect(Set(sent.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }) == ["session=abc", "theme=dark"])
    }

    @Test func cookiesStayWithTheHostThatSetThem() async throws {
        let elsewhere = Recorder<String?>()
        let other = try LoopbackServer { request in
            elsewhere.append(request.headers["Cookie"])
            return .json("{}")
        }
        defer { other.stop() }
        // 127.0.0.1 sets a cookie on a redirect to localhost: another host for cookies.
        let server = try LoopbackServer { _ in
            var response = ServerResponse(status: 302, headers: ["Location": "http://localhost:\(other.port)/landing"])
            response.repeatedFields = [("Set-Cookie", "session=abc; Path=/")]
            return response
        }
        defer { server.stop() }
        let storage = try Self.storage()
        let api = try TestAPI(baseURL: server.baseURL, transport: TestTransport.make(keepingCookiesIn: storage))
        try await (api.request(route: api.get(endpoint: "/login")) as Promise<Void>).value
        #expect(storage.cookies(for: URL(string: server.baseURL)!)?.map(\.value) == ["abc"])
        #expect(elsewhere.items.count == 1)
        #expect(elsewhere.items.first == .some(nil), "localhost got \(String(describing: elsewhere.items.first))")
    }
}

#if os(Linux)
/// What is particular to cookies over libcurl.
@Suite struct CurlCookieTests {
    /// A server that sets `session=abc` with every answer, and records each request's `Cookie`.
    static func sessionServer(recording sent: Recorder<String?>) throws -> LoopbackServer {
        try LoopbackServer { request in
            sent.append(request.headers["Cookie"])
            var response = ServerResponse.json("{}")
            response.repeatedFields = [("Set-Cookie", "session=abc; Path=/")]
            return response
        }
    }

    @Test func aRequestsOwnCookieHeaderGoesAsItIs() async throws {
        let sent = Recorder<String?>()
        let server = try Self.sessionServer(recording: sent)
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, transport: CurlTransport(cookies: CookieTests.storage()))
        try await (api.request(route: api.get(endpoint: "/first")) as Promise<Void>).value
        try await (api.request(route: api.get(endpoint: "/second"), parameters: URLParameters([:], headers: ["Cookie": "mine=1"])) as Promise<Void>).value
        #expect(sent.items == [nil, "mine=1"])
    }

    @Test func aCookieGoesOnlyWhereItsPathAndSecureFlagAllow() async throws {
        let sent = Recorder<String>()
        let server = try LoopbackServer { request in
            sent.append("\(request.path) \(request.headers["Cookie"] ?? "-")")
            var response = ServerResponse.json("{}")
            if request.path == "/login" {
                response.repeatedFields = [("Set-Cookie", "account=1; Path=/account"), ("Set-Cookie", "secret=2; Path=/; Secure"),
                                           ("Set-Cookie", "old=3; Path=/; Expires=Thu, 01 Jan 2004 00:00:00 GMT")]
            }
            return response
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, transport: CurlTransport(cookies: CookieTests.storage()))
        for path in ["/login", "/account", "/account/orders", "/accounting", "/"] {
            try await (api.request(route: api.get(endpoint: path)) as Promise<Void>).value
        }
        // The Secure one never goes over plain HTTP, nor the expired one anywhere.
        #expect(sent.items == ["/login -", "/account account=1", "/account/orders account=1", "/accounting -", "/ -"])
    }

    @Test func aFloodOfCookiesIsCappedAndUpdatesStillTakeEffect() async throws {
        let server = try LoopbackServer { request in
            // 300 new names each time (a response's head holds them: 256 KiB is the limit), then
            // a new value for the first.
            let round = request.path.dropFirst()
            var response = ServerResponse(status: 204)
            response.repeatedFields = round == "update" ? [("Set-Cookie", "c0-0=new; Path=/")]
                : (0..<300).map { ("Set-Cookie", "c\(round)-\($0)=v; Path=/") }
            return response
        }
        defer { server.stop() }
        let storage = try CookieTests.storage()
        let api = try TestAPI(baseURL: server.baseURL, transport: CurlTransport(cookies: storage))
        try await (api.request(route: api.get(endpoint: "/0")) as Promise<Void>).value
        #expect(storage.cookies?.count == CurlExchange.cookiesPerResponse)
        for round in 1...5 { try await (api.request(route: api.get(endpoint: "/\(round)")) as Promise<Void>).value }
        #expect(storage.cookies?.count == CurlExchange.cookiesPerHost)
        try await (api.request(route: api.get(endpoint: "/update")) as Promise<Void>).value
        #expect(storage.cookies?.first { $0.name == "c0-0" }?.value == "new")
        #expect(storage.cookies?.count == CurlExchange.cookiesPerHost)
    }

    @Test func pathsMatchAsRFC6265Says() {
        #expect(HTTPCookie.path("/account", matches: "/account"))
        #expect(HTTPCookie.path("/account/orders", matches: "/account"))
        #expect(HTTPCookie.path("/account/orders", matches: "/account/"))
        #expect(HTTPCookie.path("/anything", matches: "/"))
        #expect(!HTTPCookie.path("/accounting", matches: "/account"))
        #expect(!HTTPCookie.path("/", matches: "/account"))
    }

    @Test func withoutAStorageNoCookieIsKept() async throws {
        let sent = Recorder<String?>()
        let server = try Self.sessionServer(recording: sent)
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, transport: CurlTransport(cookies: nil))
        for _ in 0..<2 { try await (api.request(route: api.get(endpoint: "/")) as Promise<Void>).value }
        #expect(sent.items == [nil, nil])
    }
}
#endif
