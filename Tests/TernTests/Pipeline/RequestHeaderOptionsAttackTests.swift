import Foundation
import Testing
import Tern
import TernTesting

/// `RequestOptions(headers:)` as an attacker would fill it: control characters that would end
/// a field or the head, the fields that frame the message, and a `Cookie` of its own while the
/// API's jar holds cookies for the same server. What is refused fails typed before any byte
/// goes out; what is sent reaches the server as one field, exactly as given.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RequestHeaderOptionsAttackTests {
    func api(_ configuration: APIConfiguration = APIConfiguration(retryPolicy: .never)) -> AbstractAPI {
        AbstractAPI(configuration: configuration, transport: TestTransport.make(), responseQueue: .global())
    }

    static let injections: [(name: String, value: String)] = [
        ("X-Note", "a\r\nX-Injected: 1"),
        ("X-Note", "a\nX-Injected: 1"),
        ("X-Note", "a\rX-Injected: 1"),
        ("X-Note", "a\0b"),
        ("X-Note", "a\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x"),
        ("X-Note", "a\u{7F}"),
        ("X-Note\r\nX-Injected", "1"),
        ("X-Note: 1\r\nX-Injected", "1"),
        ("X Note", "1"),
        ("", "1"),
        ("X-Nöte", "1"),
    ]

    /// A field whose name or value would break the head fails with `invalidHeader`, naming it,
    /// and nothing reaches the server.
    @Test(arguments: injections.indices) func aFieldThatWouldBreakTheHeadIsRefusedBeforeSending(_ index: Int) async throws {
        let (name, value) = Self.injections[index]
        let server = try HeadRecordingServer()
        let result = await (api().request(route: .get(server.url + "/x"), options: RequestOptions(headers: [name: value])) as Promise<Data>).result
        guard case .failure(APIError.invalidRequest(let invalid)) = result, case .invalidHeader(let named) = invalid.reason else {
            Issue.record("\(name.debugDescription): \(value.debugDescription): \(result)")
            return
        }
        #expect(named == name)
        #expect(server.raw.connections == 0, "nothing is sent")
    }

    static let framing = ["Content-Length", "content-length", "Transfer-Encoding", "TRANSFER-ENCODING", "Host", "host", "Connection", "Upgrade", "TE", "Trailer", "Keep-Alive"]

    /// The fields that frame the message are the transport's: set by hand, in any case, even
    /// with a value that agrees with the body, they fail with `framingHeader`.
    @Test(arguments: framing) func aFramingFieldIsRefusedBeforeSending(_ name: String) async throws {
        let server = try HeadRecordingServer()
        let value = name.lowercased() == "content-length" ? "2" : name.lowercased() == "host" ? "127.0.0.1" : "chunked"
        let result = await (api().request(route: .post(server.url + "/x"), parameters: JSONParameters(["a": 1]),
                                           options: RequestOptions(headers: [name: value])) as Promise<Data>).result
        guard case .failure(APIError.invalidRequest(let invalid)) = result, case .framingHeader(let named) = invalid.reason else {
            Issue.record("\(name): \(result)")
            return
        }
        #expect(named.lowercased() == name.lowercased())
        #expect(server.raw.connections == 0, "nothing is sent")
    }

    /// What the checks let through goes out as one field, exactly: a tab, obs-text, a value
    /// with a colon, leading and trailing spaces trimmed at most.
    @Test func whatIsLetThroughArrivesAsOneFieldExactly() async throws {
        let server = try HeadRecordingServer()
        let headers: HTTPHeaders = ["X-Tab": "a\tb", "X-Colon": "a: b", "X-Quote": "\"x\", y; z=1"]
        let answer = await (api().request(route: .get(server.url + "/x"), options: RequestOptions(headers: headers)) as Promise<Data>).result
        #expect(try answer.get() == Data(#"{"target": "/x"}"#.utf8))
        #expect(HeadRecordingServer.fields("X-Tab", in: server.heads.items[0]) == ["a\tb"])
        #expect(HeadRecordingServer.fields("X-Colon", in: server.heads.items[0]) == ["a: b"])
        #expect(HeadRecordingServer.fields("X-Quote", in: server.heads.items[0]) == ["\"x\", y; z=1"])
        #expect(HeadRecordingServer.fields("X-Injected", in: server.heads.items[0]).isEmpty)
    }

    /// A request's own `Cookie` (in any case) goes out alone, as given, once: the jar's cookies
    /// for the server are neither added to it nor sent in a second field; the next request
    /// without one sends the jar's again.
    @Test(arguments: ["Cookie", "cookie", "COOKIE"]) func aRequestsOwnCookieIsSentAloneOverTheJars(_ name: String) async throws {
        let server = try HeadRecordingServer()
        let api = api(APIConfiguration(commonHeaders: ["Cookie": "common=1"], retryPolicy: .never))
        _ = try await (api.request(route: .get(server.url + "/login")) as Promise<Data>).value
        #expect(api.cookieJar?.all.map(\.name) == ["jar"])
        _ = try await (api.request(route: .get(server.url + "/own"), options: RequestOptions(headers: [name: "mine=1"])) as Promise<Data>).value
        _ = try await (api.request(route: .get(server.url + "/next")) as Promise<Data>).value
        #expect(server.heads.items.count == 3)
        #expect(HeadRecordingServer.fields("Cookie", in: server.heads.items[1]) == ["mine=1"], "\(server.heads.items[1])")
        #expect(HeadRecordingServer.fields("Cookie", in: server.heads.items[2]) == ["common=1"], "the common header, which is the request's own too, wins over the jar")
    }

    /// A request's own `Cookie` is a credential: a redirect to another origin (`localhost`
    /// from `127.0.0.1`) does not carry it, nor any other of its own fields named as such.
    @Test func aRequestsOwnCookieStaysAtItsOrigin() async throws {
        let server = try HeadRecordingServer()
        let options = RequestOptions(headers: ["Cookie": "mine=1", "Authorization": "Bearer mine", "X-Plain": "kept"])
        let answer = try await (api().request(route: .get(server.url + "/hop"), options: options) as Promise<Data>).value
        #expect(answer == Data(#"{"target": "/landed"}"#.utf8))
        #expect(server.heads.items.count == 2)
        #expect(HeadRecordingServer.fields("Cookie", in: server.heads.items[0]) == ["mine=1"])
        #expect(server.heads.items[1].hasPrefix("GET /landed "))
        #expect(HeadRecordingServer.fields("Cookie", in: server.heads.items[1]).isEmpty, "\(server.heads.items[1])")
        #expect(HeadRecordingServer.fields("Authorization", in: server.heads.items[1]).isEmpty, "\(server.heads.items[1])")
    }
}
