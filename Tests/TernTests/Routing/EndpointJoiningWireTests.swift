import Foundation
import Testing
@testable import Tern
import TernTesting
@testable import TernSnippets

/// The base URL and a route's endpoint, joined as bytes, against a real server: what reaches the
/// request line is what a user of the configuration's `baseURL` means, on each transport, or the
/// request fails typed before anything is sent. Never another host, never a crash.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct EndpointJoiningWireTests: EarlyAnswerAttack {
    /// A base URL's path (after `http://127.0.0.1:<port>`) and an endpoint, and the request
    /// target the server must see; `refusable` when failing as an invalid URL is as good.
    struct Case: Sendable, CustomTestStringConvertible {
        let base: String
        let endpoint: String
        let target: String
        var refusable = false
        var testDescription: String { "\"\(base)\" + \"\(endpoint)\" -> \(target)" }
    }

    static let cases: [Case] = [
        Case(base: "", endpoint: "/items", target: "/items"),
        Case(base: "/", endpoint: "items", target: "/items"),
        Case(base: "", endpoint: "", target: "/"),
        Case(base: "/", endpoint: "", target: "/"),
        Case(base: "/api", endpoint: "", target: "/api"),
        Case(base: "/api/", endpoint: "/items", target: "/api/items"),
        Case(base: "/api//", endpoint: "//items", target: "/api/items"),
        Case(base: "/api?key=k", endpoint: "/items?page=2", target: "/api/items?key=k&page=2"),
        Case(base: "/api?key=k", endpoint: "", target: "/api?key=k"),
        Case(base: "?key=k", endpoint: "/items", target: "/items?key=k"),
        Case(base: "/api#top", endpoint: "/items", target: "/api/items"),
        Case(base: "/api", endpoint: "?page=2", target: "/api?page=2"),
        Case(base: "/api", endpoint: "#frag", target: "/api"),
        Case(base: "/api", endpoint: "/items?page=2#frag", target: "/api/items?page=2"),
        Case(base: "/api", endpoint: "/items?", target: "/api/items"),
        Case(base: "/api", endpoint: "/a%2Fb", target: "/api/a%2Fb"),
        Case(base: "/api", endpoint: "/a%20b?q=%26", target: "/api/a%20b?q=%26"),
        Case(base: "/caf%C3%A9", endpoint: "/%C3%BCn", target: "/caf%C3%A9/%C3%BCn"),
        Case(base: "/café", endpoint: "/ünï/🐦", target: "/caf%C3%A9/%C3%BCn%C3%AF/%F0%9F%90%A6", refusable: true),
        Case(base: "/api", endpoint: "/a b", target: "/api/a%20b", refusable: true),
        Case(base: "/api", endpoint: "/search?q=ü", target: "/api/search?q=%C3%BC", refusable: true),
        Case(base: "/api", endpoint: "/100%", target: "/api/100%25", refusable: true),
        Case(base: "/api", endpoint: "/a%zz", target: "/api/a%25zz", refusable: true),
        Case(base: "/api?key=k#top", endpoint: "/items?page=2", target: "/api/items?key=k&page=2"),
        Case(base: "/api", endpoint: "/items#a?b=1", target: "/api/items"),
        Case(base: "/api?a=1&b=2", endpoint: "?b=3", target: "/api?a=1&b=2&b=3"),
        // Dot segments: the exactly-one-slash join keeps the base's last segment, and the wire
        // gets the path with its dots resolved (RFC 3986 §5.2.4), on either transport.
        Case(base: "/api/v2", endpoint: "../v1/x", target: "/api/v1/x"),
        Case(base: "/api/v2/", endpoint: "./x", target: "/api/v2/x"),
        Case(base: "/api", endpoint: "/../../x", target: "/x"),
        // Two leading slashes are not an authority: the host stays the base's.
        Case(base: "/api", endpoint: "//evil.invalid/x", target: "/api/evil.invalid/x"),
        Case(base: "", endpoint: "//evil.invalid:1/x?y=1", target: "/evil.invalid:1/x?y=1"),
    ]

    /// A server that records each request and answers `{}`.
    static func recordingServer() throws -> (LoopbackServer, Recorder<RecordedRequest>) {
        let received = Recorder<RecordedRequest>()
        let server = try LoopbackServer { request in
            received.append(request)
            return .json("{}")
        }
        return (server, received)
    }

    @Test(arguments: cases)
    func theServerGetsTheURLTheUserMeans(_ joining: Case) async throws {
        let (server, received) = try Self.recordingServer()
        defer { server.stop() }
        let base = server.baseURL + joining.base
        let api = try TestAPI(configuration: APIConfiguration(baseURL: base, retryPolicy: .never))
        let results = await Self.results(of: api.request(route: .get(joining.endpoint)) as Promise<Data>)
        #expect(results.count == 1, "settled \(results.count) times")
        switch results.first {
        case .success?:
            #expect(received.items.map(\.target) == [joining.target])
            #expect(received.items.first?.headers["Host"] == "127.0.0.1:\(server.port)")
        case .failure(APIError.invalidRequest)? where joining.refusable:
            #expect(received.items.isEmpty)
        case let other:
            Issue.record("\(String(describing: other)); the server got \(received.items.map(\.target))")
        }
    }

    /// Where the base URL ends with a slash and the endpoint is a plain relative path, the
    /// exactly-one-slash join and RFC 3986's resolution (`URL(string:relativeTo:)`, which
    /// Alamofire users write) must agree.
    @Test(arguments: [("/api/", "items"), ("/api/v2/", "items?page=2"), ("/", "a/b/c"), ("/api/", "a%2Fb"), ("/api/", "x?y=1#z")])
    func agreesWithFoundationsResolutionWhereTheyMeanTheSame(base: String, endpoint: String) async throws {
        let (server, received) = try Self.recordingServer()
        defer { server.stop() }
        let resolved = try #require(URL(string: endpoint, relativeTo: URL(string: server.baseURL + base))?.absoluteURL)
        let expected = resolved.path(percentEncoded: true) + (resolved.query(percentEncoded: true).map { "?" + $0 } ?? "")
        let api = try TestAPI(configuration: APIConfiguration(baseURL: server.baseURL + base, retryPolicy: .never))
        _ = try await (api.request(route: .get(endpoint)) as Promise<Data>).value
        #expect(received.items.map(\.target) == [expected])
    }

    /// DefiningAnAPI's `pathSegment` puts any value into a path as one segment that names no
    /// other path; without it, the value `..` asks for the parent (the trap it is there for).
    @Test func aValueIsOneSegmentAndNeverClimbs() async throws {
        let (server, received) = try Self.recordingServer()
        defer { server.stop() }
        let api = try TestAPI(configuration: APIConfiguration(baseURL: server.baseURL + "/api", retryPolicy: .never))
        _ = try await (api.request(route: .get("/users/../orders")) as Promise<Data>).value
        #expect(received.items.map(\.target) == ["/api/orders"])
        #expect(pathSegment("..") == nil && pathSegment(".") == nil && pathSegment("") == nil)
        let values = ["a.b", "...", ".hidden", "a/..", "../x", "%2E%2E", "a?b#c", "é ü", ".. "]
        for value in values {
            let segment = try #require(pathSegment(value))
            _ = try await (api.request(route: .get("/users/\(segment)/orders")) as Promise<Data>).value
        }
        let targets = received.items.dropFirst().map(\.target)
        #expect(targets.count == values.count)
        for (target, value) in zip(targets, values) {
            #expect(target.hasPrefix("/api/users/") && target.hasSuffix("/orders"), "\(value) reached \(target)")
            let segment = target.dropFirst("/api/users/".count).dropLast("/orders".count)
            #expect(segment.removingPercentEncoding == value, "\(value) reached \(target)")
        }
    }

    /// An endpoint in two leading slashes names no other host: nothing reaches a server there.
    @Test func anEndpointThatLooksLikeAnotherHostStaysOnTheBase() async throws {
        let (server, received) = try Self.recordingServer()
        defer { server.stop() }
        let (other, elsewhere) = try Self.recordingServer()
        defer { other.stop() }
        let api = try TestAPI(configuration: APIConfiguration(baseURL: server.baseURL + "/api", retryPolicy: .never))
        _ = try await (api.request(route: .get("//127.0.0.1:\(other.port)/x")) as Promise<Data>).value
        #expect(elsewhere.items.isEmpty)
        #expect(received.items.map(\.target) == ["/api/127.0.0.1:\(other.port)/x"])
    }

    /// A base URL with credentials in it reaches its server at the base's path; its password
    /// never goes to another origin a redirect leads to.
    @Test func aBaseWithUserinfoKeepsItsPathAndItsPasswordAtHome() async throws {
        let (other, elsewhere) = try Self.recordingServer()
        defer { other.stop() }
        let received = Recorder<RecordedRequest>()
        let server = try LoopbackServer { request in
            received.append(request)
            return request.path == "/api/away" ? ServerResponse(status: 302, headers: ["Location": other.baseURL + "/there"]) : .json("{}")
        }
        defer { server.stop() }
        let base = "http://user:p%40ss@127.0.0.1:\(server.port)/api"
        let api = try TestAPI(configuration: APIConfiguration(baseURL: base, retryPolicy: .never))
        let results = await Self.results(of: api.request(route: .get("/items")) as Promise<Data>)
        #expect(results.count == 1)
        switch results.first {
        case .success?, .failure(APIError.invalidRequest)?: break
        case let other: Issue.record("\(String(describing: other))")
        }
        #expect(received.items.allSatisfy { $0.target == "/api/items" })
        _ = await Self.results(of: api.request(route: .get("/away")) as Promise<Data>)
        #expect(elsewhere.items.allSatisfy { $0.headers["Authorization"] == nil }, "\(elsewhere.items.map(\.headers))")
    }

    /// An IPv6 literal with a port, joined to an endpoint: the request reaches ::1 at that port.
    @Test func anIPv6LiteralBaseReachesItsServer() async throws {
        let received = Recorder<String>()
        let server: RawServer
        do {
            server = try RawServer(ipv6: true) { connection in
                while let request = connection.readRequest() {
                    received.append(request)
                    connection.send(RawServer.Connection.response("{}"))
                }
            }
        } catch {
            return  // no IPv6 loopback here: nothing to attack
        }
        defer { server.stop() }
        let api = try TestAPI(configuration: APIConfiguration(baseURL: server.baseURL + "/v1/", retryPolicy: .never))
        let results = await Self.results(of: api.request(route: .get("/items?page=2")) as Promise<Data>)
        #expect(results.count == 1)
        // FoundationNetworking refuses a bracketed host (URLError -1000, badURL): typed, and
        // nothing sent. libcurl, Tern's default, must reach the server.
        if case .failure(APIError.transportFailed)? = results.first, !TestTransport.isCurl {
            #expect(received.items.isEmpty)
            return
        }
        guard case .success? = results.first else {
            Issue.record("\(String(describing: results.first))")
            return
        }
        let head = try #require(received.items.first)
        #expect(head.hasPrefix("GET /v1/items?page=2 HTTP/1.1\r\n"))
        #expect(head.lowercased().contains("\r\nhost: [::1]:\(server.port)\r\n"))
    }

    /// A base URL that is no URL fails every request typed, naming it; nothing is sent.
    @Test(arguments: ["http://127.0.0.1:99999/api", "http://[::1/api", "http:///api", "127.0.0.1:8080/api"])
    func aBaseThatIsNoURLFailsTyped(base: String) async throws {
        let api = try TestAPI(configuration: APIConfiguration(baseURL: base, retryPolicy: .never))
        let results = await Self.results(of: api.request(route: .get("/items")) as Promise<Data>)
        #expect(results.count == 1)
        guard case .failure(APIError.invalidRequest)? = results.first else {
            Issue.record("\(String(describing: results.first))")
            return
        }
    }
}
