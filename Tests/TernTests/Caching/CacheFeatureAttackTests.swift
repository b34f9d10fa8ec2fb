import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The cache where it meets the other features: downloads, redirects, cookies, HEAD, ranges
/// and credentials, against socket servers that answer what an attacker would.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CacheFeatureAttackTests {
    typealias Origin = HTTPCacheTests.Origin
    let clock = TestClock()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-feature-\(UUID().uuidString)")

    /// Adds `headers` to every request whose path starts with `path`.
    struct Headers: RequestAdapter {
        let headers: [String: String]
        var path = "/"

        func adapt(_ request: inout URLRequest) throws {
            guard request.url?.path.hasPrefix(path) == true else { return }
            for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        }
    }

    func api(_ cache: HTTPCache, cookies: CookieKeeping = .inAJarOfItsOwn, adapters: [any RequestAdapter] = [],
             delegate: (any APIDelegate)? = nil) -> AbstractAPI {
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, adapters: adapters, cookies: cookies, cache: cache),
                              transport: TestTransport.make(), responseQueue: .global())
        api.delegate = delegate
        return api
    }

    static func text(_ response: Response) -> String { String(decoding: response.body, as: UTF8.self) }

    @Test func aDownloadAnsweredFromTheCacheWritesTheKeptBody() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let origin = try Origin { _, number in HTTPCacheTests.answer("file v\(number)", "Cache-Control: max-age=600\r\nETag: \"v\(number)\"\r\n") }
        let api = api(HTTPCache(clock: clock))
        let first = try await api.download(route: .get(origin.url + "/f"), to: directory.appendingPathComponent("a")).value
        let second = try await api.download(route: .get(origin.url + "/f"), to: directory.appendingPathComponent("b")).value
        #expect(try String(contentsOf: first.fileURL, encoding: .utf8) == "file v0")
        #expect(try String(contentsOf: second.fileURL, encoding: .utf8) == "file v0")
        #expect(second.response.cacheOutcome == .hit)
        #expect(origin.count == 1)
    }

    @Test func aDownloadLargerThanTheCachesLimitIsWholeAndNotKept() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let body = String(repeating: "x", count: 300_000)
        let origin = try Origin { _, _ in HTTPCacheTests.answer(body, "Cache-Control: max-age=600\r\n") }
        let api = api(HTTPCache(maximumBytes: 1 << 20, maximumResponseBytes: 100_000, clock: clock))
        for name in ["a", "b"] {
            let file = try await api.download(route: .get(origin.url + "/big"), to: directory.appendingPathComponent(name)).value
            #expect(try Data(contentsOf: file.fileURL).count == 300_000)
        }
        #expect(origin.count == 2)
    }

    /// A kept redirect to another origin, for a request carrying `Authorization`: the other
    /// origin never sees the credentials, whether the redirect came from the server or the cache.
    @Test func aKeptRedirectToAnotherOriginTakesNoCredentialsThere() async throws {
        let other = try Origin { _, _ in HTTPCacheTests.answer("other") }
        let target = other.url.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let first = try Origin { _, _ in
            HTTPCacheTests.answer("", status: "301 Moved Permanently", "Location: \(target)/landed\r\nCache-Control: public, max-age=600\r\n")
        }
        let api = api(HTTPCache(clock: clock), adapters: [Headers(headers: ["Authorization": "Bearer secret", "Cookie": "s=1"])])
        for _ in 0..<2 {
            let response: Response = try await api.request(route: .get(first.url + "/start")).value
            #expect(Self.text(response) == "other")
        }
        #expect(first.count == 1)
        #expect(other.count == 2)
        #expect(!other.requests.items.joined().contains("secret"))
        #expect(!other.requests.items.joined().contains("s=1"))
    }

    /// A `HEAD` answered first: its empty body is never what a later `GET` gets.
    @Test func aHeadFirstNeverGivesAGetAnEmptyBody() async throws {
        let origin = try Origin { request, _ in
            request.hasPrefix("HEAD") ? "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nCache-Control: max-age=600\r\nETag: \"a\"\r\n\r\n"
                : HTTPCacheTests.answer("body", "Cache-Control: max-age=600\r\nETag: \"a\"\r\n")
        }
        let api = api(HTTPCache(clock: clock))
        let _: Response = try await api.request(route: .head(origin.url + "/h")).value
        let get: Response = try await api.request(route: .get(origin.url + "/h")).value
        #expect(Self.text(get) == "body")
        let again: Response = try await api.request(route: .get(origin.url + "/h")).value
        #expect(Self.text(again) == "body")
    }

    /// A request with a `Range` of its own goes to the server, and its part is not kept as the
    /// whole: the next plain `GET` gets the whole body.
    @Test func aRangeOfTheUsersOwnIsNeitherAnsweredNorKeptAsTheWhole() async throws {
        let origin = try Origin { request, _ in
            request.contains("Range: bytes=0-1") ?
                HTTPCacheTests.answer("ab", status: "206 Partial Content", "Content-Range: bytes 0-1/6\r\nCache-Control: max-age=600\r\nETag: \"a\"\r\n")
                : HTTPCacheTests.answer("abcdef", "Cache-Control: max-age=600\r\nETag: \"a\"\r\n")
        }
        let cache = HTTPCache(clock: clock)
        let ranged = api(cache, adapters: [Headers(headers: ["Range": "bytes=0-1"])])
        let api = api(cache)
        let part: Response = try await ranged.request(route: .get(origin.url + "/r")).value
        #expect(Self.text(part) == "ab")
        let whole: Response = try await api.request(route: .get(origin.url + "/r")).value
        #expect(Self.text(whole) == "abcdef")
        let part2: Response = try await ranged.request(route: .get(origin.url + "/r")).value
        #expect(Self.text(part2) == "ab")
        #expect(part2.statusCode == 206)
    }

    /// A kept answer that set a cookie: a hit does not set it again (after the app cleared
    /// the jar, say, to sign out), and the cookie is never written with the response.
    @Test func aHitDoesNotSetTheKeptAnswersCookiesAgain() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try Origin { _, number in
            HTTPCacheTests.answer("v\(number)", "Cache-Control: max-age=600\r\nSet-Cookie: session=topsecret\(number); Path=/\r\n")
        }
        let jar = CookieJar()
        let api = api(try HTTPCache(directory: directory, clock: clock), cookies: .shared(jar))
        let _: Response = try await api.request(route: .get(origin.url + "/c")).value
        #expect(jar.all.count == 1)
        jar.removeAll()
        let hit: Response = try await api.request(route: .get(origin.url + "/c")).value
        #expect(jar.all.isEmpty)
        #expect(hit.headers["Set-Cookie"] == nil)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        for file in files {
            let data = try Data(contentsOf: directory.appendingPathComponent(file))
            #expect(!String(decoding: data, as: UTF8.self).contains("topsecret"))
        }
    }

    /// The jar's cookie changes (another account signs in): what was kept for the first is
    /// not served to the second, even when the server says nothing of cookies.
    @Test func anAnswerKeptForOneAccountsCookieIsNotServedToAnother() async throws {
        let origin = try Origin { request, _ in
            if request.hasPrefix("GET /login/") {
                let name = request.dropFirst("GET /login/".count).prefix { $0 != " " }
                return HTTPCacheTests.answer("ok", "Set-Cookie: user=\(name); Path=/\r\n")
            }
            let user = request.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("cookie:") } ?? "none"
            return HTTPCacheTests.answer(user, "Cache-Control: private, max-age=600\r\n")
        }
        let api = api(HTTPCache(clock: clock))
        let _: Response = try await api.request(route: .get(origin.url + "/login/alice")).value
        let alice: Response = try await api.request(route: .get(origin.url + "/me")).value
        let _: Response = try await api.request(route: .get(origin.url + "/login/bob")).value
        let bob: Response = try await api.request(route: .get(origin.url + "/me")).value
        #expect(Self.text(alice).contains("alice"))
        #expect(Self.text(bob).contains("bob"))
    }

    /// Signs only once it holds a token, and takes one when refused.
    final class SignsAfterRefusal: APIDelegate, Sendable {
        let token = Locked("")

        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            let token = token.withLock { $0 }
            if !token.isEmpty { request.setValue("Bearer " + token, forHTTPHeaderField: "Authorization") }
        }

        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            token.withLock { $0 = "fresh" }
            return Promise(value: (), in: .global())
        }
    }

    /// A `401` the server marks cacheable, answering a request without credentials: the
    /// request sent again with the refreshed token goes to the server, and is answered.
    @Test func aRefusalKeptForAnUnsignedRequestDoesNotAnswerTheSignedOne() async throws {
        let origin = try Origin { request, _ in
            request.contains("Authorization: Bearer fresh") ? HTTPCacheTests.answer("data")
                : HTTPCacheTests.answer("who are you", status: "401 Unauthorized", "WWW-Authenticate: Bearer\r\nCache-Control: max-age=600\r\n")
        }
        let api = api(HTTPCache(clock: clock), delegate: SignsAfterRefusal())
        let result = await (api.request(route: .get(origin.url + "/mine")) as Promise<Response>).result
        #expect((try? result.get()).map(Self.text) == "data", "\(result)")
    }

    /// Two `GET`s with bodies of their own (as search APIs take them): the second is not
    /// answered with what the server said to the first. (FoundationNetworking sends no `GET`
    /// with a body: it fails with `-1103`.)
    @Test(.enabled(if: TestTransport.isCurl)) func aGetWithABodyIsNotAnsweredWithAnotherBodysResponse() async throws {
        let origin = try Origin { request, _ in
            HTTPCacheTests.answer("for " + (request.components(separatedBy: "\r\n\r\n").last ?? ""), "Cache-Control: max-age=600\r\n")
        }
        let api = api(HTTPCache(clock: clock))
        let first: Response = try await api.request(route: .get(origin.url + "/search"), parameters: BodyParameters(Data("alpha".utf8))).value
        let second: Response = try await api.request(route: .get(origin.url + "/search"), parameters: BodyParameters(Data("beta".utf8))).value
        #expect(Self.text(first) == "for alpha")
        #expect(Self.text(second) == "for beta")
    }

    /// A cache pointed at a file of the user's, or at a directory where links named as the
    /// cache names its files lead to a file of the user's: that file keeps its bytes whatever
    /// the cache looks up, keeps (a link in its way is replaced, never written through),
    /// evicts or forgets.
    @Test func theUsersFileAndLinksNamedLikeTheCachesStay() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let elsewhere = directory.appendingPathComponent("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let notes = elsewhere.appendingPathComponent("notes.txt")
        try Data("the user's".utf8).write(to: notes)
        #expect(throws: (any Error).self) { try HTTPCache(directory: notes) }
        let cacheDirectory = directory.appendingPathComponent("cache")
        try FileManager.default.createDirectory(at: cacheDirectory, withIntermediateDirectories: true)
        let urls = (0..<3).map { URL(string: "http://a.example/\($0)")! }
        let links = urls.map { cacheDirectory.appendingPathComponent(CacheStore.fileName(CacheKey.of($0)) + ".terncache") }
        for link in links { try FileManager.default.createSymbolicLink(at: link, withDestinationURL: notes) }
        let cache = try HTTPCache(directory: cacheDirectory, maximumBytes: 600, clock: clock)
        for url in urls { #expect(cache.response(for: URLRequest(url: url), trust: nil) == nil) }
        for number in 0..<6 {
            cache.store(CachedResponse(url: CacheKey.of(URL(string: "http://a.example/\(number % 3 == 0 ? "x\(number)" : "\(number)")")!), status: 200,
                                       headers: ["cache-control": "max-age=600"], body: Data(String(repeating: "b", count: 150).utf8),
                                       requestDate: cache.now, responseDate: cache.now, varying: [:]))
        }
        cache.removeAll()
        #expect(try String(contentsOf: notes, encoding: .utf8) == "the user's")
    }
}
