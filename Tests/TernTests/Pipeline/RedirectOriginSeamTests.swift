import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A leg's origin is worked out only when the chain is redirected: chains that leave it, come
/// back, loop, or are answered by the cache or read as a stream, against two real servers (a
/// different port is a different origin). Credentials never reach the other origin and are
/// never restored on the way back; every request settles once, typed.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RedirectOriginSeamTests: EarlyAnswerAttack {
    typealias Origin = RedirectTests.OtherOrigin
    typealias Signer = RedirectTests.Signer

    static let headers: HTTPHeaders = ["Authorization": "Basic dXNlcjpwYXNz", "X-Api-Key": "k", "X-Trace": "t"]

    static func redirect(_ status: Int, to location: String) -> String { RedirectTests.redirect(status, to: location) }

    /// An API at `home` with credentials, a cookie for `home` in its jar and a signing delegate.
    static func api(at home: Origin, cache: HTTPCache? = nil) throws -> (TestAPI, Signer) {
        let configuration = APIConfiguration(baseURL: home.baseURL, commonHeaders: headers, retryPolicy: .never,
                                             redirectPolicy: RedirectPolicy(sensitiveHeaders: ["X-Api-Key"]), cache: cache)
        let api = try TestAPI(configuration: configuration)
        api.cookieJar?.setCookies(from: ["session=home; Path=/"], for: try #require(URL(string: home.baseURL)))
        let signer = Signer()
        api.delegate = signer
        return (api, signer)
    }

    /// Whether `request` carries none of the credentials.
    static func bare(_ request: RecordedRequest) -> Bool {
        request.headers["Authorization"] == nil && request.headers["Cookie"] == nil && request.headers["X-Api-Key"] == nil
    }

    @Test(arguments: [301, 302, 303, 307, 308])
    func leavingAndComingBackNeverRestoresCredentials(status: Int) async throws {
        let home = try Origin(), away = try Origin()
        let (api, signer) = try Self.api(at: home)
        let back = away.baseURL + Self.redirect(status, to: home.baseURL + "/echo?back=1")
        let echo: Echo = try await api.request(route: .get(Self.redirect(status, to: back))).value
        #expect(echo.query == "back=1")
        #expect(echo.header("X-Trace") == "t")
        let last = try #require(home.received.items.last)
        #expect(Self.bare(last), "came back with \(last.headers)")
        #expect(away.received.items.count == 1)
        #expect(away.received.items.allSatisfy(Self.bare), "\(away.received.items.map(\.headers))")
        #expect(home.received.items.first?.headers["Cookie"] == "session=home")
        #expect(home.received.items.first?.headers["Authorization"] == "Bearer secret")
        #expect(signer.signed.items.count == 1, "signed \(signer.signed.items)")
        // The next request starts at the origin again, with everything.
        let again: Echo = try await api.request(route: .get("/echo")).value
        #expect(again.header("Authorization") == "Bearer secret")
        #expect(again.header("Cookie") == "session=home")
    }

    /// A request's own redirect policy, which names no header of its own, still keeps the
    /// configuration's sensitive headers at their origin.
    @Test func aRequestsOwnPolicyKeepsTheAPIsSensitiveHeadersHome() async throws {
        let home = try Origin(), away = try Origin()
        let (api, _) = try Self.api(at: home)
        let options = RequestOptions(redirectPolicy: RedirectPolicy(maximumRedirects: 2))
        let echo: Echo = try await api.request(route: .get(Self.redirect(302, to: away.baseURL + "/echo")), options: options).value
        #expect(echo.header("X-Trace") == "t")
        #expect(home.received.items.first?.headers["X-Api-Key"] == "k")
        #expect(away.received.items.count == 1)
        #expect(away.received.items.allSatisfy(Self.bare), "\(away.received.items.map(\.headers))")
    }

    @Test(arguments: [307, 308])
    func aBodyThatFollowsToAnotherOriginGoesWithoutCredentials(status: Int) async throws {
        let home = try Origin(), away = try Origin()
        let (api, _) = try Self.api(at: home)
        let echo: Echo = try await api.request(route: .post(Self.redirect(status, to: away.baseURL + "/echo")),
                                               parameters: JSONParameters(["name": "tern"])).value
        #expect(echo.method == "POST")
        #expect(String(decoding: echo.body, as: UTF8.self) == #"{"name":"tern"}"#)
        #expect(away.received.items.allSatisfy(Self.bare))
    }

    /// The origin is the first URL's scheme, host and port as browsers compare them: the same
    /// origin spelled otherwise keeps its credentials; another name for the same server does not.
    @Test(arguments: [("http://127.0.0.1:{port}/echo", true), ("//127.0.0.1:{port}/echo", true), ("http://localhost:{port}/echo", false)])
    func theOriginIsComparedAsBrowsersDo(location: String, sameOrigin: Bool) async throws {
        let home = try Origin()
        let (api, signer) = try Self.api(at: home)
        let target = location.replacingOccurrences(of: "{port}", with: "\(home.server.port)")
        let echo: Echo = try await api.request(route: .get(Self.redirect(302, to: target))).value
        #expect(echo.path == "/echo")
        #expect((echo.header("Authorization") == "Bearer secret") == sameOrigin, "\(echo.headers)")
        #expect((echo.header("Cookie") == "session=home") == sameOrigin, "\(echo.headers)")
        #expect(signer.signed.items.count == (sameOrigin ? 2 : 1))
    }

    /// Two origins that send each other back and forth: the limit stops it, typed, once.
    @Test func aLoopBetweenTwoOriginsStopsAtTheLimit() async throws {
        let bases = Recorder<String>()
        let counts = Recorder<Int>()
        let make = { (index: Int) in
            try LoopbackServer { _ in
                counts.append(index)
                return ServerResponse(status: 302, headers: ["Location": bases.items[1 - index] + "/loop"])
            }
        }
        let first = try make(0), second = try make(1)
        defer { first.stop(); second.stop() }
        bases.append(first.baseURL)
        bases.append(second.baseURL)
        let (api, signer) = try Self.api(at: try Origin())
        let results = await Self.results(of: api.request(route: .get(first.baseURL + "/loop")) as Promise<Data>)
        #expect(results.count == 1)
        guard case .failure(APIError.redirectFailed(let failure))? = results.first else {
            Issue.record("\(String(describing: results.first))")
            return
        }
        #expect(failure.reason == .tooManyRedirects(limit: 10))
        #expect(counts.items == (0..<11).map { $0 % 2 })
        // Neither is the API's origin: the delegate signed the first request alone.
        #expect(signer.signed.items.count == 1)
    }

    /// A `Location` that is relative, empty, or only a query: resolved against the URL that was
    /// redirected (RFC 3986 §5), or a typed failure; never another host, never a hang.
    @Test(arguments: [("?page=2", "/start?page=2"), ("next", "/next"), ("./next?x=1", "/next?x=1"), ("#top", nil), ("", nil)] as [(String, String?)])
    func aLocationOfEveryShape(location: String, lands: String?) async throws {
        let received = Recorder<RecordedRequest>()
        let server = try LoopbackServer { request in
            received.append(request)
            return request.target == "/start" ? ServerResponse(status: 302, headers: ["Location": location]) : .json(Echo(request))
        }
        defer { server.stop() }
        let api = try TestAPI(configuration: APIConfiguration(baseURL: server.baseURL, retryPolicy: .never))
        let results = await Self.results(of: api.request(route: .get("/start")) as Promise<Echo>)
        #expect(results.count == 1)
        switch results.first {
        case .success?:
            #expect(lands != nil, "followed \(location) to \(received.items.map(\.target))")
            if let lands { #expect(received.items.map(\.target) == ["/start", lands]) }
        case .failure(APIError.redirectFailed)?, .failure(APIError.unacceptableStatus)?:
            #expect(lands == nil, "\(String(describing: results.first))")
        case let other:
            Issue.record("\(String(describing: other)); the server got \(received.items.map(\.target))")
        }
    }

    /// A 301 the cache keeps (`public`: the request was signed): answered from the cache the second time, its chain still leaves
    /// the origin, and the other origin still gets no credential.
    @Test func aCachedPermanentRedirectStillDropsCredentials() async throws {
        let away = try Origin()
        let homeReceived = Recorder<RecordedRequest>()
        let homeServer = try LoopbackServer { request in
            homeReceived.append(request)
            return ServerResponse(status: 301, headers: ["Location": away.baseURL + "/echo", "Cache-Control": "public, max-age=600"])
        }
        defer { homeServer.stop() }
        let configuration = APIConfiguration(baseURL: homeServer.baseURL, commonHeaders: Self.headers, retryPolicy: .never,
                                             redirectPolicy: RedirectPolicy(sensitiveHeaders: ["X-Api-Key"]), cache: HTTPCache())
        let api = try TestAPI(configuration: configuration)
        api.cookieJar?.setCookies(from: ["session=home; Path=/"], for: try #require(URL(string: homeServer.baseURL)))
        let signer = Signer()
        api.delegate = signer
        for _ in 0..<3 {
            let echo: Echo = try await api.request(route: .get("/moved")).value
            #expect(echo.path == "/echo")
            #expect(echo.header("Authorization") == nil && echo.header("Cookie") == nil && echo.header("X-Api-Key") == nil, "\(echo.headers)")
        }
        #expect(away.received.items.count == 3)
        #expect(signer.signed.items.allSatisfy { $0.hasPrefix(homeServer.baseURL) }, "\(signer.signed.items)")
        #expect(homeReceived.items.count == 1, "the 301 was not kept: \(homeReceived.items.count) requests")
    }

    /// A stream redirected to another origin: its lines come from there, without credentials.
    @Test func aStreamRedirectedToAnotherOriginReadsItsLinesThere() async throws {
        let awayReceived = Recorder<RecordedRequest>()
        let awayServer = try LoopbackServer { request in
            awayReceived.append(request)
            return ServerResponse(headers: ["Content-Type": "text/plain"], body: Data("one\ntwo\n".utf8))
        }
        defer { awayServer.stop() }
        let home = try Origin()
        let (api, signer) = try Self.api(at: home)
        let lines = try await Self.within {
            var lines: [String] = []
            for try await line in api.stream(route: .get(Self.redirect(307, to: awayServer.baseURL + "/lines"))).lines { lines.append(line) }
            return lines
        }
        #expect(lines == ["one", "two"])
        #expect(awayReceived.items.count == 1)
        #expect(awayReceived.items.allSatisfy(Self.bare), "\(awayReceived.items.map(\.headers))")
        #expect(signer.signed.items.count == 1)
    }

    /// Cookies a stop sets are kept for its own URL; the chain still sends none once it has left
    /// the origin, even those its first stop just set.
    @Test func cookiesSetAlongTheChainAreKeptButNotSentOffOrigin() async throws {
        let home = try Origin(), away = try Origin()
        let back = away.baseURL + Self.redirect(303, to: home.baseURL + "/echo")
        // The chain starts at a third origin, which sets a cookie for 127.0.0.1 as it redirects.
        let login = try LoopbackServer { _ in
            var response = ServerResponse(status: 302, headers: ["Location": back])
            response.repeatedFields = [("Set-Cookie", "fresh=1; Path=/")]
            return response
        }
        defer { login.stop() }
        let api = try TestAPI(configuration: APIConfiguration(baseURL: home.baseURL, retryPolicy: .never))
        let echo: Echo = try await api.request(route: .get(login.baseURL + "/login")).value
        #expect(echo.path == "/echo")
        #expect(echo.header("Cookie") == nil, "\(echo.headers)")
        #expect(away.received.items.allSatisfy { $0.headers["Cookie"] == nil })
        // Kept all the same: the next request to that host (cookies know no port) sends it.
        let next: Echo = try await api.request(route: .get("/echo")).value
        #expect(next.header("Cookie") == "fresh=1")
    }
}
