import Foundation
import Testing
import Tern
import TernCore
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Pagination a hostile server steers, through `pages(_:style:collectionKeyPath:)` alone, over
/// the transport under test: next links and cursors that point away, redirect away, or carry
/// query syntax; a `Link` header of thousands of entries, malformed ones among them; and pages
/// from an API with an HTTP cache.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct PaginationSeamAttackTests {
    /// Signs every request it is asked to with a bearer token.
    final class Signer: APIDelegate {
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer secret-token", forHTTPHeaderField: "Authorization")
        }
    }

    static func api(delegate: (any APIDelegate)? = nil, cache: HTTPCache? = nil) -> AbstractAPI {
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, cache: cache),
                              transport: TestTransport.make(), responseQueue: .global())
        api.delegate = delegate
        return api
    }

    /// The target of a request's line: `/path?query`.
    static func target(of request: String) -> String { KeepingServer.target(of: request) }

    /// The value of the field `name` a request carried, if it did.
    static func field(_ name: String, in request: String) -> String? {
        let field = request.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
        return field.map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
    }

    /// A JSON page answer.
    static func page(_ body: String, headers: String = "") -> String {
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\(headers)\r\n\(body)"
    }

    /// A server that answers each request with what `answer` makes of it, and keeps every request.
    typealias Hostile = KeepingServer

    // MARK: Where a next link may lead

    /// Next links to other schemes, or spelled to look like the first page's origin while
    /// naming another host: none is followed, nothing else is asked of the server, and the loop
    /// throws `invalidRequest` naming the link, not a silent end that looks like the last page.
    @Test(arguments: [
        "ftp://127.0.0.1:PORT/p2", "file:///etc/passwd", "data:application/json,[1]", "javascript:alert(1)",
        "//localhost:PORT/p2", "http://127.0.0.1:PORT@localhost:PORT/p2", "http://localhost:PORT#@127.0.0.1:PORT/p2",
        "https://127.0.0.1:PORT/p2", "ws://127.0.0.1:PORT/p2", "http://alice:s3cret@localhost:PORT/p2",
    ])
    func aNextLinkAwayIsNotFollowed(link: String) async throws {
        let server = try Hostile { request, port in
            let to = link.replacingOccurrences(of: "PORT", with: String(port))
            return Self.page("[1, 2]", headers: "Link: <\(to)>; rel=\"next\"\r\n")
        }
        var pages: [[Int]] = []
        var refusal: String?
        do {
            for try await page in Self.api(delegate: Signer()).pages(APIRequest<[Int]>(.get(server.baseURL + "/p1")), style: .linkHeader) {
                pages.append(page.elements)
            }
        } catch APIError.invalidRequest(let failure) {
            refusal = failure.description
        }
        #expect(pages == [[1, 2]])
        #expect(server.targets == ["/p1"])
        #expect(refusal?.contains("leads to another origin than the first page's (http://127.0.0.1:\(server.port))") == true, "\(refusal ?? "no error")")
        #expect(refusal?.contains("s3cret") == false, "a link's password is not in the error: \(refusal ?? "")")
    }

    /// A next link at the first page's origin, which the server redirects to another: the
    /// delegate's `Authorization` and the first origin's cookie do not go there, and the other
    /// origin's own next link is not followed: the loop throws there.
    @Test func aNextPageRedirectedAwayCarriesNoCredentials() async throws {
        let away = try Hostile { request, port in
            Self.page("[3]", headers: "Link: <http://127.0.0.1:\(port)/p3>; rel=\"next\"\r\n")
        }
        let home = try Hostile { request, port in
            switch Self.target(of: request) {
            case "/p1": Self.page("[1]", headers: "Set-Cookie: session=home-secret; Path=/\r\nLink: </p2>; rel=\"next\"\r\n")
            case "/p2": "HTTP/1.1 302 Found\r\nLocation: \(away.baseURL)/p2\r\nContent-Length: 0\r\n\r\n"
            default: Self.page("[]")
            }
        }
        var pages: [[Int]] = []
        await #expect(throws: APIError.self) {
            for try await page in Self.api(delegate: Signer()).pages(APIRequest<[Int]>(.get(home.baseURL + "/p1")), style: .linkHeader) {
                pages.append(page.elements)
            }
        }
        #expect(pages == [[1], [3]])
        #expect(home.targets == ["/p1", "/p2"])
        // The first origin's requests carried its credentials: the test can fail.
        #expect(home.requests.items.map { Self.field("Authorization", in: $0) } == ["Bearer secret-token", "Bearer secret-token"])
        #expect(Self.field("Cookie", in: home.requests.items[1]) == "session=home-secret")
        #expect(away.targets == ["/p2"])
        let stolen = away.requests.items.first ?? ""
        #expect(Self.field("Authorization", in: stolen) == nil, "\(stolen)")
        #expect(Self.field("Cookie", in: stolen) == nil, "\(stolen)")
        #expect(!stolen.contains("secret"), "\(stolen)")
    }

    /// A next page redirected to a scheme that is not http: the loop ends with the redirect's
    /// typed error, and nothing from there becomes a page.
    @Test(arguments: ["file:///etc/passwd", "data:application/json,[666]", "ftp://127.0.0.1:1/p2"])
    func aNextPageRedirectedOffHTTPFails(location: String) async throws {
        let server = try Hostile { request, _ in
            Self.target(of: request) == "/p1" ? Self.page("[1]", headers: "Link: </p2>; rel=next\r\n")
                : "HTTP/1.1 302 Found\r\nLocation: \(location)\r\nContent-Length: 0\r\n\r\n"
        }
        var pages: [[Int]] = []
        do {
            for try await page in Self.api().pages(APIRequest<[Int]>(.get(server.baseURL + "/p1")), style: .linkHeader) {
                pages.append(page.elements)
            }
            Issue.record("no error")
        } catch APIError.redirectFailed {
        } catch {
            Issue.record("expected redirectFailed, got \(error)")
        }
        #expect(pages == [[1]])
        #expect(server.targets == ["/p1", "/p2"])
    }

    /// A cycle A → B → A, B's link to A absolute and A's relative: two pages, two requests.
    @Test func aCycleThroughTwoPagesEnds() async throws {
        let server = try Hostile { request, port in
            Self.target(of: request) == "/a" ? Self.page("[1]", headers: "Link: </b>; rel=next\r\n")
                : Self.page("[2]", headers: "Link: </a>; rel=prev, <http://127.0.0.1:\(port)/a>; rel=next\r\n")
        }
        var pages: [[Int]] = []
        for try await page in Self.api().pages(APIRequest<[Int]>(.get(server.baseURL + "/a")), style: .linkHeader) {
            pages.append(page.elements)
        }
        #expect(pages == [[1], [2]])
        #expect(server.targets == ["/a", "/b"])
    }

    /// A `Link` header of three thousand entries, malformed ones among them, with the next
    /// link last: it is found, and followed.
    @Test func aLinkHeaderOfThousandsOfEntriesFindsItsNext() async throws {
        var entries: [String] = []
        for index in 0..<3_000 {
            switch index % 4 {
            case 0: entries.append("</p\(index)>; rel=prev")
            case 1: entries.append("garbage \(index)")
            case 2: entries.append("</q\(index)>; ;; rel; title=\"a, b; <c>\"")
            default: entries.append("</r\(index)>; rel=\"last first\"")
            }
        }
        let header = entries.joined(separator: ", ") + ", </p2>; rel=\"next\""
        let server = try Hostile { request, _ in
            Self.target(of: request) == "/p1" ? Self.page("[1]", headers: "Link: \(header)\r\n") : Self.page("[2]")
        }
        var pages: [[Int]] = []
        for try await page in Self.api().pages(APIRequest<[Int]>(.get(server.baseURL + "/p1")), style: .linkHeader) {
            pages.append(page.elements)
        }
        #expect(pages == [[1], [2]])
        #expect(server.targets == ["/p1", "/p2"])
    }

    // MARK: Cursors

    /// A cursor holding query syntax is one value of its parameter: it adds no other parameter
    /// to the next page's query, and loses nothing after a `#`.
    @Test func aCursorCannotAddToTheQuery() async throws {
        let server = try Hostile { request, _ in
            Self.target(of: request) == "/items" ? Self.page(#"{"items": [1], "next": "c2&admin=1#frag ment/../x"}"#)
                : Self.page(#"{"items": [], "next": null}"#)
        }
        var pages: [[Int]] = []
        let sequence = Self.api().pages(APIRequest<[Int]>(.get(server.baseURL + "/items")), style: .cursor(parameter: "after", from: .body("next")),
                                        collectionKeyPath: "items")
        for try await page in sequence { pages.append(page.elements) }
        #expect(pages == [[1]])
        let second = try #require(server.targets.dropFirst().first)
        let items = URLComponents(string: second)?.queryItems ?? []
        #expect(items.map(\.name) == ["after"], "\(second)")
        #expect(items.first?.value == "c2&admin=1#frag ment/../x", "\(second)")
        #expect(URLComponents(string: second)?.path == "/items", "\(second)")
    }

    // MARK: An HTTP cache

    /// Pages an hour fresh, linked A → B → A, through an API with an HTTP cache: the second
    /// iteration is answered from the cache, as its rules allow, and ends where the first did.
    @Test func cachedPagesEndWhereFreshOnesDid() async throws {
        let server = try Hostile { request, port in
            let headers = "Cache-Control: max-age=3600\r\n"
            return Self.target(of: request) == "/a" ? Self.page("[1]", headers: headers + "Link: </b>; rel=next\r\n")
                : Self.page("[2]", headers: headers + "Link: <http://127.0.0.1:\(port)/a>; rel=next\r\n")
        }
        let api = Self.api(cache: HTTPCache())
        for round in 1...2 {
            var pages: [[Int]] = []
            for try await page in api.pages(APIRequest<[Int]>(.get(server.baseURL + "/a")), style: .linkHeader) {
                pages.append(page.elements)
            }
            #expect(pages == [[1], [2]], "round \(round)")
        }
        #expect(server.targets == ["/a", "/b"])
    }

    // MARK: Memory

    /// An element, `{"tag": …, "n": …}`, that counts the live instances of its tag.
    final class Tracked: Decodable, Sendable {
        static let live = Locked([String: Int]())
        let tag: String
        let n: Int

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            tag = try container.decode(String.self, forKey: .tag)
            n = try container.decode(Int.self, forKey: .n)
            Self.live.withLock { $0[tag, default: 0] += 1 }
        }

        deinit {
            let tag = tag
            Self.live.withLock { $0[tag, default: 0] -= 1 }
        }

        enum Keys: String, CodingKey { case tag, n }

        static func count(_ tag: String) -> Int { live.withLock { $0[tag] ?? 0 } }
    }
}
