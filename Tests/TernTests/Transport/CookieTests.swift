import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting

/// Cookies over either transport: each API keeps its own in a jar, set from responses (each
/// `Set-Cookie` on its own), sent back to the host that set them and to no other, and never what
/// a browser would refuse.
@Suite(.onTestThreads) struct CookieTests {
    /// A server that sets `fields` on `/set`, and records each other request's `Cookie`.
    static func server(setting fields: [String], recording sent: Recorder<String>) throws -> LoopbackServer {
        try LoopbackServer { request in
            var response = ServerResponse.json("{}")
            if request.path == "/set" {
                response.repeatedFields = fields.map { ("Set-Cookie", $0) }
            } else {
                sent.append("\(request.path) \(request.headers["Cookie"] ?? "-")")
            }
            return response
        }
    }

    @Test func cookiesSetByAResponseGoBackWithTheNextRequest() async throws {
        let sent = Recorder<String>()
        // Two fields, one with a date whose comma a joined header would make ambiguous.
        let server = try Self.server(setting: ["session=abc; Path=/; HttpOnly", "theme=dark; Path=/; Expires=Wed, 21 Oct 2099 07:28:00 GMT"],
                                     recording: sent)
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(retryPolicy: .never))
        try await (api.request(route: api.post(endpoint: "/set")) as Promise<Void>).value
        #expect(Set(api.cookieJar?.all.map { "\($0.name)=\($0.value)" } ?? []) == ["session=abc", "theme=dark"])
        try await (api.request(route: api.get(endpoint: "/me")) as Promise<Void>).value
        #expect(sent.items == ["/me session=abc; theme=dark"])
    }

    @Test func cookiesStayWithTheHostThatSetThem() async throws {
        let elsewhere = Recorder<String?>()
        let other = try LoopbackServer { request in
            elsewhere.append(request.headers["Cookie"])
            return .json("{}")
        }
        defer { other.stop() }
        // 127.0.0.1 sets cookies on a redirect to localhost: another host. The one naming
        // localhost as its domain is refused: an IP address sets cookies for itself alone.
        let server = try LoopbackServer { _ in
            var response = ServerResponse(status: 302, headers: ["Location": "http://localhost:\(other.port)/landing"])
            response.repeatedFields = [("Set-Cookie", "session=abc; Path=/"), ("Set-Cookie", "planted=1; Domain=localhost; Path=/")]
            return response
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        try await (api.request(route: api.get(endpoint: "/login")) as Promise<Void>).value
        #expect(api.cookieJar?.cookies(for: URL(string: server.baseURL)!).map(\.value) == ["abc"])
        #expect(api.cookieJar?.all.count == 1)
        #expect(elsewhere.items == [nil])
        try await (api.request(route: .get("http://localhost:\(other.port)/again")) as Promise<Void>).value
        #expect(elsewhere.items == [nil, nil])
    }

    @Test func aChainThatLeftTheOriginCarriesNoCookieBackToIt() async throws {
        // 127.0.0.1 set a cookie; a request to it is sent to localhost, which sends it back: from
        // the moment the chain left, no cookie goes out, as no other credential does.
        let sent = Recorder<String>()
        let away = try LoopbackServer { request in
            ServerResponse(status: 302, headers: ["Location": request.queryItems.first { $0.name == "to" }?.value ?? "/"])
        }
        defer { away.stop() }
        let server = try LoopbackServer { request in
            var response = ServerResponse.json("{}")
            switch request.path {
            case "/set": response.repeatedFields = [("Set-Cookie", "session=abc; Path=/")]
            case "/out":
                let back = "http://127.0.0.1:\(request.headers["Host"]?.split(separator: ":").last ?? "")/back"
                response = ServerResponse(status: 302, headers: ["Location": "http://localhost:\(away.port)/bounce?to=\(back)"])
            default: break
            }
            sent.append("\(request.path) \(request.headers["Cookie"] ?? "-")")
            return response
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        for path in ["/set", "/out", "/home"] {
            try await (api.request(route: api.get(endpoint: path)) as Promise<Void>).value
        }
        #expect(sent.items == ["/set -", "/out session=abc", "/back -", "/home session=abc"])
    }

    @Test func whatABrowserRefusesIsNeitherKeptNorSent() async throws {
        let sent = Recorder<String>()
        let server = try Self.server(setting: [
            "cr=a\rb; Path=/", "vt=a\u{0B}b; Path=/", "del=a\u{7F}b; Path=/",   // control characters
            "secure=1; Path=/; Secure",                                        // Secure over plain http
            "__Host-x=1; Path=/", "__Secure-y=1; Path=/",                      // prefixes without Secure
            "ip=1; Domain=127.0.0.2; Path=/", "tld=1; Domain=com; Path=/",     // another host, a public suffix
            "kept=1; Path=/",
        ], recording: sent)
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        try await (api.request(route: api.get(endpoint: "/set")) as Promise<Void>).value
        try await (api.request(route: api.get(endpoint: "/next")) as Promise<Void>).value
        #expect(api.cookieJar?.all.map(\.name) == ["kept"])
        #expect(sent.items == ["/next kept=1"])
    }

    /// A comma inside one `Set-Cookie` field belongs to its cookie's value, as browsers read it:
    /// a server that writes what a link asked for into a cookie (`lang=en, session=planted`)
    /// must not plant a second one. Over URLSession the fields come joined with commas, and a
    /// comma before a name and `=` is taken for the next field's start: what can be told apart.
    @Test func aCommaInsideOneSetCookieFieldPlantsNoOtherCookie() async throws {
        let sent = Recorder<String>()
        let server = try Self.server(setting: ["lang=en, session=planted; Path=/", "theme=dark; Path=/"], recording: sent)
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        try await (api.request(route: api.get(endpoint: "/set")) as Promise<Void>).value
        try await (api.request(route: api.get(endpoint: "/next")) as Promise<Void>).value
        let kept = Set(api.cookieJar?.all.map { "\($0.name)=\($0.value)" } ?? [])
        if TestTransport.readsFieldsOneByOne {
            #expect(kept == ["lang=en, session=planted", "theme=dark"])
            #expect(sent.items == ["/next lang=en, session=planted; theme=dark"])
        } else {
            #expect(kept == ["lang=en", "session=planted", "theme=dark"])
        }
    }

    /// Fields after a chunked body's last chunk are trailers, which no browser takes cookies
    /// from: the body arrives whole and the jar stays empty.
    @Test(.enabled(if: TestTransport.survivesTrailers, "FoundationNetworking ends the process on trailers"))
    func aCookieInAChunkedBodysTrailersIsNotKept() async throws {
        let sent = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let name = ConnectionReuseTests.name(of: request)
                sent.append("\(name) \(request.contains("\r\nCookie:") ? "cookie" : "-")")
                connection.send(name == "set"
                    ? "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Set-Cookie\r\n\r\n5\r\nhello\r\n0\r\nSet-Cookie: planted=1; Path=/\r\n\r\n"
                    : RawServer.Connection.response(name))
            }
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        let body: String = try await api.request(route: api.get(endpoint: "/set")).value
        #expect(body == "hello")
        let next: String = try await api.request(route: api.get(endpoint: "/next")).value
        #expect(next == "next")
        #expect(api.cookieJar?.all.isEmpty == true)
        #expect(sent.items == ["set -", "next -"])
    }

    @Test func maxAgeZeroDeletesAndMaxAgeWinsOverExpires() async throws {
        let sent = Recorder<String>()
        let round = Recorder<Int>()
        let server = try LoopbackServer { request in
            var response = ServerResponse.json("{}")
            if request.path == "/set" {
                round.append(1)
                response.repeatedFields = round.items.count == 1
                    ? [("Set-Cookie", "a=1; Path=/"), ("Set-Cookie", "b=1; Path=/; Max-Age=-1; Expires=Wed, 21 Oct 2099 07:28:00 GMT")]
                    : [("Set-Cookie", "a=1; Path=/; Max-Age=0")]
            } else {
                sent.append(request.headers["Cookie"] ?? "-")
            }
            return response
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        for path in ["/set", "/check", "/set", "/check"] {
            try await (api.request(route: api.get(endpoint: path)) as Promise<Void>).value
        }
        #expect(sent.items == ["a=1", "-"])
    }

    @Test func aRequestsOwnCookieHeaderGoesAsItIs() async throws {
        let sent = Recorder<String>()
        let server = try Self.server(setting: ["session=abc; Path=/"], recording: sent)
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        try await (api.request(route: api.get(endpoint: "/set")) as Promise<Void>).value
        try await (api.request(route: api.get(endpoint: "/mine"), parameters: URLParameters([:], headers: ["Cookie": "mine=1"])) as Promise<Void>).value
        #expect(sent.items == ["/mine mine=1"])
    }

    @Test func anAPIThatKeepsNoCookiesSendsNone() async throws {
        let sent = Recorder<String>()
        let server = try Self.server(setting: ["session=abc; Path=/"], recording: sent)
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(retryPolicy: .never, cookies: .none))
        try await (api.request(route: api.get(endpoint: "/set")) as Promise<Void>).value
        try await (api.request(route: api.get(endpoint: "/next")) as Promise<Void>).value
        #expect(api.cookieJar == nil)
        #expect(sent.items == ["/next -"])
    }

    @Test func eachAPIHasAJarOfItsOwnUnlessItSharesOne() async throws {
        let sent = Recorder<String>()
        let server = try Self.server(setting: ["session=abc; Path=/"], recording: sent)
        defer { server.stop() }
        let first = try TestAPI(baseURL: server.baseURL)
        let second = try TestAPI(baseURL: server.baseURL)
        try await (first.request(route: first.get(endpoint: "/set")) as Promise<Void>).value
        try await (second.request(route: second.get(endpoint: "/second")) as Promise<Void>).value
        let jar = CookieJar()
        let sharing = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(retryPolicy: .never, cookies: .shared(jar)))
        try await (sharing.request(route: sharing.get(endpoint: "/set")) as Promise<Void>).value
        let other = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(retryPolicy: .never, cookies: .shared(jar)))
        try await (other.request(route: other.get(endpoint: "/shared")) as Promise<Void>).value
        #expect(sent.items == ["/second -", "/shared session=abc"])
    }
}

/// The jar's rules alone, for hosts a loopback server cannot be.
@Suite(.onTestThreads) struct CookieJarTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func names(_ jar: CookieJar, for url: String) -> [String] {
        jar.cookies(for: URL(string: url)!, at: now).map(\.name)
    }

    @Test(.enabled(if: PublicSuffixList.isAvailable, "the system has no libpsl"))
    func publicSuffixesAndOtherSitesAreRefused() {
        let jar = CookieJar()
        jar.setCookies(from: ["uk=1; Domain=co.uk", "com=1; Domain=com", "bare=1; Domain=example", "local=1; Domain=localhost",
                              "other=1; Domain=example.org", "parent=1; Domain=shop.co.uk", "dotted=1; Domain=.shop.co.uk",
                              "host=1"],
                       for: URL(string: "https://www.shop.co.uk/")!, at: now)
        #expect(Set(names(jar, for: "https://www.shop.co.uk/")) == ["parent", "dotted", "host"])
        #expect(Set(names(jar, for: "https://api.shop.co.uk/")) == ["parent", "dotted"])
        #expect(names(jar, for: "https://bank.co.uk/").isEmpty)
        #expect(names(jar, for: "https://example.com/").isEmpty)
        // A host that is itself a public suffix sets host-only cookies, for itself alone.
        jar.setCookies(from: ["self=1; Domain=localhost"], for: URL(string: "http://localhost/")!, at: now)
        #expect(names(jar, for: "http://localhost/") == ["self"])
        #expect(names(jar, for: "http://app.localhost/").isEmpty)
    }

    /// The list's other rules: names in any case, private suffixes (`github.io`), wildcards
    /// (`*.ck`) and their exceptions (`!www.ck`), punycode, and a domain above the host's own
    /// registrable one (`amazonaws.com` from a bucket under `s3.amazonaws.com`).
    @Test(.enabled(if: PublicSuffixList.isAvailable, "the system has no libpsl"))
    func theListsOtherRulesHoldAsInABrowser() {
        let cases: [(host: String, set: [String], kept: [String])] = [
            ("www.shop.co.uk", ["a=1; Domain=CO.UK", "b=1; Domain=Co.Uk.", "c=1; Domain=.CO.UK", "d=1; Domain=SHOP.CO.UK"], ["d"]),
            ("user.github.io", ["a=1; Domain=github.io", "b=1; Domain=.github.io", "c=1; Domain=user.github.io"], ["c"]),
            ("shop.xn--p1ai", ["a=1; Domain=xn--p1ai", "b=1; Domain=рф", "c=1; Domain=shop.xn--p1ai"], ["c"]),
            ("www.ck", ["a=1; Domain=ck", "b=1; Domain=www.ck"], ["b"]),
            ("a.foo.ck", ["a=1; Domain=foo.ck", "b=1; Domain=a.foo.ck"], ["b"]),
            ("x.s3.amazonaws.com", ["a=1; Domain=s3.amazonaws.com", "b=1; Domain=amazonaws.com"], []),
            ("www.example.com", ["a=1; Domain=com.", "b=1; Domain=..com", "c=1; Domain=%2ecom", "d=1; Domain= example.com "], ["d"]),
        ]
        for (host, set, kept) in cases {
            let jar = CookieJar()
            jar.setCookies(from: set, for: URL(string: "https://\(host)/")!, at: now)
            #expect(names(jar, for: "https://\(host)/").sorted() == kept, "\(host)")
        }
    }

    /// As browsers hold them: `__Host-` written with `Path=/` and no `Domain` (not even the
    /// host's own), prefixes in any case, `SameSite=None` only with `Secure`.
    @Test func prefixesAndSameSiteNoneAreHeldToWhatBrowsersAsk() {
        let jar = CookieJar()
        jar.setCookies(from: ["__Host-a=1; Secure; Path=/", "__Host-b=1; Secure", "__Host-c=1; Secure; Path=/; Domain=127.0.0.1",
                              "__host-d=1; Path=/", "__HOST-e=1; Secure; Path=/", "__Secure-f=1; Secure", "__SECURE-g=1",
                              "h=1; SameSite=None", "i=1; SameSite=none; Secure", "j=1; SameSite=Lax", "k=1; SameSite=Strict"],
                       for: URL(string: "https://127.0.0.1/account/")!, at: now)
        #expect(Set(names(jar, for: "https://127.0.0.1/account/")) == ["__Host-a", "__HOST-e", "__Secure-f", "i", "j", "k"])
    }

    /// "shop.co.uk." is the same host as "shop.co.uk" (the root's dot), and libpsl knows no
    /// suffix "co.uk.": before the dot was taken away for the list, "evil.co.uk." set a cookie
    /// for "co.uk." that went to every other "….co.uk.".
    @Test(.enabled(if: PublicSuffixList.isAvailable, "the system has no libpsl"))
    func aHostWrittenWithTheRootsDotIsHeldToTheListToo() {
        let jar = CookieJar()
        jar.setCookies(from: ["uk=1; Domain=co.uk.", "com=1; Domain=uk.", "parent=1; Domain=shop.co.uk.", "host=1"],
                       for: URL(string: "https://www.shop.co.uk./")!, at: now)
        #expect(Set(names(jar, for: "https://www.shop.co.uk./")) == ["parent", "host"])
        #expect(names(jar, for: "https://api.shop.co.uk./") == ["parent"])
        #expect(names(jar, for: "https://bank.co.uk./").isEmpty)
        jar.setCookies(from: ["self=1; Domain=co.uk."], for: URL(string: "https://co.uk./")!, at: now)
        #expect(names(jar, for: "https://co.uk./") == ["self"])
        #expect(names(jar, for: "https://bank.co.uk./").isEmpty)
    }

    @Test func anIPAddressSetsCookiesForItselfAlone() {
        let jar = CookieJar()
        jar.setCookies(from: ["a=1; Domain=0.0.1", "b=1; Domain=10.0.0.1", "c=1"], for: URL(string: "http://10.0.0.1/")!, at: now)
        #expect(Set(names(jar, for: "http://10.0.0.1/")) == ["b", "c"])
        #expect(names(jar, for: "http://20.10.0.0.1/").isEmpty)
        #expect(jar.all.allSatisfy { $0.isHostOnly })
    }

    @Test func expiryFollowsMaxAgeThenExpiresAndNeverPassesFourHundredDays() throws {
        let jar = CookieJar()
        let url = URL(string: "https://shop.example.com/")!
        jar.setCookies(from: ["short=1; Max-Age=60; Expires=Wed, 21 Oct 2099 07:28:00 GMT", "long=1; Max-Age=999999999",
                              "dated=1; Expires=Wednesday, 21-Oct-99 07:28:00 GMT", "bad=1; Max-Age=1x"],
                       for: url, at: now)
        let byName = Dictionary(uniqueKeysWithValues: jar.cookies(for: url, at: now).map { ($0.name, $0) })
        #expect(byName["short"]?.expires == now.addingTimeInterval(60))
        #expect(byName["long"]?.expires == now.addingTimeInterval(400 * 24 * 3600))
        #expect(byName["bad"]?.expires == nil)
        // 99 is 1999: in the past.
        #expect(byName["dated"] == nil)
        #expect(jar.cookies(for: url, at: now.addingTimeInterval(61)).map(\.name).contains("short") == false)
    }

    @Test func cookieDatesAreReadInEveryFormatServersUse() {
        let expected = Date(timeIntervalSince1970: 4_096_250_880)   // 2099-10-21 07:28:00 UTC
        for text in ["Wed, 21 Oct 2099 07:28:00 GMT", "Wednesday, 21-Oct-2099 07:28:00 GMT", "Wed Oct 21 07:28:00 2099", "21 Oct 2099 7:28:0"] {
            #expect(CookieDate.parse(text) == expected, "\(text)")
        }
        for text in ["31 Feb 2099 07:28:00", "21 Oct 2099", "21 Foo 2099 07:28:00", "21 Oct 1600 07:28:00", "21 Oct 2099 24:00:00"] {
            #expect(CookieDate.parse(text) == nil, "\(text)")
        }
    }

    /// An attribute of more than 1,024 octets is ignored, as browsers do; the cookie stays.
    @Test func anAttributeTooLongIsIgnoredNotTheCookie() {
        let jar = CookieJar()
        let long = String(repeating: "p", count: 1_100)
        let url = URL(string: "https://x.example.com/a/b")!
        jar.setCookies(from: ["path=1; Path=/\(long)", "domain=1; Domain=\(long).example.com", "kept=1; Path=/\(long.prefix(1_000))"],
                       for: url, at: now)
        let byName = Dictionary(uniqueKeysWithValues: jar.all.map { ($0.name, $0) })
        #expect(byName["path"]?.path == "/a")
        #expect(byName["domain"]?.isHostOnly == true && byName["domain"]?.domain == "x.example.com")
        #expect(byName["kept"]?.path == "/" + long.prefix(1_000))
    }

    @Test func aSecureCookieCannotBeShadowedFromPlainHTTP() {
        let jar = CookieJar()
        jar.setCookies(from: ["id=secret; Secure"], for: URL(string: "https://example.com/")!, at: now)
        jar.setCookies(from: ["id=planted"], for: URL(string: "http://example.com/")!, at: now)
        #expect(jar.cookies(for: URL(string: "https://example.com/")!, at: now).map(\.value) == ["secret"])
    }

    @Test func domainsAndTheWholeJarAreCapped() {
        let jar = CookieJar(maximumPerDomain: 50, maximumCount: 3000)
        for host in 0..<300 {
            let url = URL(string: "https://h\(host).example.com/")!
            jar.setCookies(from: (0..<60).map { "c\($0)=v" }, for: url, at: now.addingTimeInterval(Double(host)))
        }
        #expect(jar.all.count == 3000)
        #expect(names(jar, for: "https://h299.example.com/").count == 50)
        // The oldest hosts went first; the newest kept their newest 50.
        #expect(names(jar, for: "https://h0.example.com/").isEmpty)
        #expect(!names(jar, for: "https://h299.example.com/").contains("c0"))
    }

    /// As libcurl sends a path (checked with `curl_url_get` on this machine): literal `.` and
    /// `..` segments gone, percent-encoded ones kept.
    @Test(arguments: [("/admin/../public", "/public"), ("/a/./b", "/a/b"), ("/a/b/..", "/a/"), ("/a/b/.", "/a/b/"),
                      ("/../../x", "/x"), ("/a//b", "/a//b"), ("/a/%2e%2e/b", "/a/%2e%2e/b"), ("/", "/"), ("/a/", "/a/"),
                      ("/a.b/c..d/.e", "/a.b/c..d/.e"), ("/..", "/")])
    func dotSegmentsGoAsLibcurlTakesThemAway(path: String, sent: String) {
        #expect(Cookie.removingDotSegments(path) == sent)
    }

    @Test func pathsMatchAsRFC6265Says() {
        #expect(Cookie.path("/account", matches: "/account"))
        #expect(Cookie.path("/account/orders", matches: "/account"))
        #expect(Cookie.path("/account/orders", matches: "/account/"))
        #expect(Cookie.path("/anything", matches: "/"))
        #expect(!Cookie.path("/accounting", matches: "/account"))
        #expect(!Cookie.path("/", matches: "/account"))
        let jar = CookieJar()
        jar.setCookies(from: ["a=1; Path=/account", "b=1"], for: URL(string: "https://x.example.com/account/orders")!, at: now)
        #expect(names(jar, for: "https://x.example.com/account/orders/7") == ["a", "b"])
        #expect(names(jar, for: "https://x.example.com/accounting").isEmpty)
    }

    /// As browsers match them: against the path as the request writes it, percent-encoded, and
    /// octet by octet. A cookie for `/admin` does not go to `/%61dmin`; one set from `/a%2Fb/c`
    /// is for `/a%2Fb`, not `/a/b`; `é` written two ways is two paths.
    @Test func pathsAreMatchedAsTheRequestWritesThem() {
        let jar = CookieJar()
        jar.setCookies(from: ["admin=1; Path=/admin", "here=1"], for: URL(string: "https://x.example.com/a%2Fb/c")!, at: now)
        #expect(jar.all.first { $0.name == "here" }?.path == "/a%2Fb")
        #expect(names(jar, for: "https://x.example.com/admin/users") == ["admin"])
        #expect(names(jar, for: "https://x.example.com/%61dmin/users").isEmpty)
        #expect(names(jar, for: "https://x.example.com/a%2Fb/d") == ["here"])
        #expect(names(jar, for: "https://x.example.com/a/b/d").isEmpty)
        // The path libcurl sends, without dot segments.
        #expect(names(jar, for: "https://x.example.com/admin/../public").isEmpty)
        #expect(names(jar, for: "https://x.example.com/public/../admin/x") == ["admin"])
        #expect(!Cookie.path("/cafe\u{301}", matches: "/caf\u{E9}"))
        #expect(Cookie.path("/caf\u{E9}/menu", matches: "/caf\u{E9}"))
    }

    @Test func aJarWithAFileKeepsItsLastingCookiesAcrossLaunches() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-cookies-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("cookies.json")
        let url = URL(string: "https://shop.example.com/")!
        let first = CookieJar(file: file)
        first.setCookies(from: ["lasting=1; Max-Age=3600", "session=2", "gone=3; Max-Age=3600"], for: url)
        first.setCookies(from: ["gone=3; Max-Age=0"], for: url)
        first.waitForWrites()
        #expect(Set(first.all.map(\.name)) == ["lasting", "session"])
        // The next launch: what lasts, and nothing else.
        #expect(CookieJar(file: file).cookies(for: url).map(\.name) == ["lasting"])
        let permissions = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? NSNumber
        #expect(permissions?.intValue == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["cookies.json"])
        // A file that is no jar's (Tern's writes are whole or not at all): neither read nor
        // written over; the jar keeps its cookies in memory.
        try Data("{not json".utf8).write(to: file)
        let fresh = CookieJar(file: file)
        #expect(fresh.isEmpty)
        fresh.setCookies(from: ["new=1; Max-Age=60"], for: url)
        fresh.waitForWrites()
        #expect(fresh.cookies(for: url).map(\.name) == ["new"])
        #expect(try String(contentsOf: file, encoding: .utf8) == "{not json")
        // Nor one longer than the jar would write: a document named by mistake.
        let document = Data(repeating: UInt8(ascii: "d"), count: 16 << 10)
        try document.write(to: file)
        let small = CookieJar(file: file, maximumCount: 1)
        small.setCookies(from: ["new=1; Max-Age=60"], for: url)
        small.waitForWrites()
        #expect(try Data(contentsOf: file) == document)
        // An empty file is an empty jar's.
        try Data().write(to: file)
        let emptied = CookieJar(file: file)
        emptied.setCookies(from: ["new=1; Max-Age=60"], for: url)
        emptied.waitForWrites()
        #expect(CookieJar(file: file).cookies(for: url).map(\.name) == ["new"])
    }

    /// A jar's file in a directory not made yet (an app's support folder on its first launch),
    /// as a cache's or a recording's may be: the directory is made, the cookies kept. (They were
    /// not: each write failed, silently, and every launch began with an empty jar.)
    @Test func aJarsFileInADirectoryNotYetMadeIsKept() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-cookies-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("App/cookies.json")
        let url = URL(string: "https://shop.example.com/")!
        let first = CookieJar(file: file)
        first.setCookies(from: ["lasting=1; Max-Age=3600"], for: url)
        first.waitForWrites()
        #expect(CookieJar(file: file).cookies(for: url).map(\.name) == ["lasting"])
        let permissions = try? FileManager.default.attributesOfItem(atPath: file.deletingLastPathComponent().path)[.posixPermissions] as? NSNumber
        #expect(permissions?.intValue == 0o700)
    }

    @Test func joinedSetCookieFieldsAreSplitWhereANewCookieBegins() {
        #expect(SetCookieFields.split("a=1; Expires=Wed, 21 Oct 2099 07:28:00 GMT, b=2; Path=/") == ["a=1; Expires=Wed, 21 Oct 2099 07:28:00 GMT", "b=2; Path=/"])
        #expect(SetCookieFields.split("a=1,b=2") == ["a=1", "b=2"])
        #expect(SetCookieFields.split("a=x,y") == ["a=x,y"])
    }
}
