#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// Cookies set over HTTP/2, where each `set-cookie` is a field of its own in the HPACK block
/// and libcurl hands them over as lines it makes: the jar keeps each cookie as its field says,
/// never two joined into one, and refuses what a browser refuses (Security: "a hostile server
/// cannot plant a cookie a browser would refuse").
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct HTTP2CookieAttackTests {
    /// HPACK's static index of `set-cookie` (RFC 7541, appendix A).
    static let setCookie = 55

    static func server(_ cookies: [String]) throws -> ScriptedHTTP2Server {
        try ScriptedHTTP2Server { request, connection in
            let body = Data(#"[{"name":"c\#(connection.number)s\#(request.stream)"}]"#.utf8)
            let fields = cookies.map { (index: Self.setCookie, value: $0) } + [(31, "application/json"), (28, String(body.count))]
            connection.headers(request.stream, endsStream: false, fields: fields)
            connection.send(.data, 0x1, request.stream, body)
        }
    }

    /// The jar after one GET answered over HTTP/2 with a `set-cookie` field for each of
    /// `cookies`, and the URL the answer came from.
    static func jar(setting cookies: [String]) async throws -> (CookieJar, URL) {
        let server = try server(cookies)
        let jar = CookieJar()
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never, cookies: .shared(jar)),
                              transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
        let items: [HTTP2GoAwayAttackTests.Item] = try await api.request(route: .get(server.url + "/set")).value
        #expect(items == [HTTP2GoAwayAttackTests.Item(name: "c1s1")])
        return (jar, try #require(URL(string: server.url + "/")))
    }

    /// Three cookies in one answer, one of them with an `Expires` whose date holds a comma:
    /// three cookies, each with its own value and attributes (the date within the 400 days a
    /// cookie may live, RFC 6265bis).
    @Test func eachSetCookieFieldIsOneCookie() async throws {
        let expires = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 60).rounded(.down) * 60 + 30 * 86_400)
        let format = DateFormatter()
        format.locale = Locale(identifier: "en_US_POSIX")
        format.timeZone = TimeZone(identifier: "GMT")
        format.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let (jar, url) = try await Self.jar(setting: [
            "a=1; Expires=\(format.string(from: expires)); Path=/",
            "b=2; Path=/; HttpOnly",
            "c=three, four; Path=/",
        ])
        let cookies = jar.cookies(for: url).sorted { $0.name < $1.name }
        #expect(cookies.map(\.name) == ["a", "b", "c"], "\(cookies)")
        #expect(cookies.map(\.value) == ["1", "2", "three, four"], "\(cookies)")
        #expect(cookies.first?.expires == expires, "\(cookies)")
    }

    /// Cookies for another domain, a public suffix, or with a name or value no browser takes,
    /// in fields of their own beside a sound one: only the sound one is kept.
    @Test func whatABrowserRefusesIsRefusedOverHTTP2Too() async throws {
        let (jar, _) = try await Self.jar(setting: [
            "planted=1; Domain=example.com; Path=/",
            "suffix=1; Domain=com; Path=/",
            "=nameless; Path=/",
            "kept=1; Path=/",
        ])
        #expect(jar.all.map(\.name) == ["kept"], "\(jar.all)")
    }
}
#endif
