import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The cache's rules against a real socket server, with a test clock moving time: what is kept
/// and for how long, revalidation, Vary, invalidation, request directives, Authorization,
/// cookies, the size limits, and the files on disk. On every transport.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct HTTPCacheTests {
    /// A server answering each request with what `answer` makes of it and its number (from 0),
    /// and keeping every request's head.
    final class Origin: Sendable {
        let requests = Recorder<String>()
        let server: RawServer

        init(_ answer: @escaping @Sendable (_ request: String, _ number: Int) -> String) throws {
            let requests = requests
            let counter = Locked(0)
            server = try RawServer { connection in
                while let request = connection.readRequest() {
                    let number = counter.withLock { count in defer { count += 1 }; return count }
                    requests.append(request)
                    guard connection.send(answer(request, number)) else { return }
                }
            }
        }

        deinit { server.stop() }

        var url: String { server.baseURL }
        var count: Int { requests.items.count }
    }

    /// A response with `body` and `headers` (each line ended already).
    static func answer(_ body: String, status: String = "200 OK", _ headers: String = "") -> String {
        RawServer.Connection.response(body, status: status, headers: headers)
    }

    static func now() -> String { HTTPDate.format(Date()) }

    let clock = TestClock()

    func api(_ cache: HTTPCache, delegate: (any APIDelegate)? = nil) -> AbstractAPI {
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: cache),
                              transport: TestTransport.make(), responseQueue: .global())
        api.delegate = delegate
        return api
    }

    func get(_ api: AbstractAPI, _ url: String, _ options: RequestOptions = RequestOptions()) async throws -> Response {
        try await api.request(route: .get(url), options: options).value
    }

    // MARK: Freshness

    @Test func aFreshResponseIsServedWithoutTheServerUntilItsMaxAgeHasPassed() async throws {
        let origin = try Origin { _, number in Self.answer("v\(number)", "Cache-Control: max-age=60\r\n") }
        let api = api(HTTPCache(clock: clock))
        let first = try await get(api, origin.url + "/items")
        #expect(first.cacheOutcome == .miss)
        clock.advance(by: 59)
        let second = try await get(api, origin.url + "/items")
        #expect(String(decoding: second.body, as: UTF8.self) == "v0")
        #expect(second.cacheOutcome == .hit)
        #expect(second.headers["Age"] == "59")
        #expect(origin.count == 1)
        clock.advance(by: 2)
        let third = try await get(api, origin.url + "/items")
        #expect(String(decoding: third.body, as: UTF8.self) == "v1")
        #expect(third.cacheOutcome == .miss)
        #expect(origin.count == 2)
    }

    @Test func expiresCountsFromTheServersDate() async throws {
        let origin = try Origin { _, number in
            let date = Date()
            return Self.answer("v\(number)", "Date: \(HTTPDate.format(date))\r\nExpires: \(HTTPDate.format(date.addingTimeInterval(30)))\r\n")
        }
        let api = api(HTTPCache(clock: clock))
        _ = try await get(api, origin.url + "/expires")
        clock.advance(by: 20)
        #expect(try await get(api, origin.url + "/expires").cacheOutcome == .hit)
        clock.advance(by: 12)
        #expect(try await get(api, origin.url + "/expires").cacheOutcome == .miss)
        #expect(origin.count == 2)
    }

    @Test func anInvalidExpiresIsAlreadyStale() async throws {
        let origin = try Origin { _, number in Self.answer("v\(number)", "Expires: 0\r\n") }
        let api = api(HTTPCache(clock: clock))
        _ = try await get(api, origin.url + "/zero")
        #expect(try await get(api, origin.url + "/zero").cacheOutcome == .miss)
        #expect(origin.count == 2)
    }

    @Test func heuristicFreshnessOnlyWhereTheStatusAllowsIt() async throws {
        // Modified ten days ago: a tenth of that (a day, the cap) fresh, for a 200; never for a 201.
        let modified = HTTPDate.format(Date().addingTimeInterval(-10 * 24 * 3600))
        let origin = try Origin { request, number in
            Self.answer("v\(number)", status: request.contains("/created") ? "201 Created" : "200 OK", "Last-Modified: \(modified)\r\n")
        }
        let api = api(HTTPCache(clock: clock))
        _ = try await get(api, origin.url + "/old")
        clock.advance(by: 3600)
        #expect(try await get(api, origin.url + "/old").cacheOutcome == .hit)
        _ = try await get(api, origin.url + "/created")
        #expect(try await get(api, origin.url + "/created").cacheOutcome == .miss)
        #expect(origin.count == 3)
    }

    // MARK: Revalidation

    @Test func aStaleResponseIsRevalidatedWithItsETagAndA304RefreshesIt() async throws {
        let origin = try Origin { request, number in
            if request.contains("If-None-Match: \"abc\"") {
                return "HTTP/1.1 304 Not Modified\r\nETag: \"abc\"\r\nCache-Control: max-age=100\r\nX-Checked: \(number)\r\n\r\n"
            }
            return Self.answer("body", "ETag: \"abc\"\r\nCache-Control: max-age=10\r\nX-Checked: first\r\n")
        }
        let api = api(HTTPCache(clock: clock))
        _ = try await get(api, origin.url + "/tagged")
        clock.advance(by: 11)
        let revalidated = try await get(api, origin.url + "/tagged")
        #expect(revalidated.statusCode == 200)
        #expect(String(decoding: revalidated.body, as: UTF8.self) == "body")
        #expect(revalidated.cacheOutcome == .revalidated)
        #expect(revalidated.headers["X-Checked"] == "1")
        #expect(origin.requests.items.last?.contains("If-None-Match: \"abc\"") == true)
        // The 304's max-age now counts.
        clock.advance(by: 50)
        #expect(try await get(api, origin.url + "/tagged").cacheOutcome == .hit)
        #expect(origin.count == 2)
    }

    /// An `Age` no clock reaches, on the response and on the 304 that revalidates it: the kept
    /// response is answered with an `Age` of its own, and nothing traps on the number.
    @Test(arguments: ["9223372036854775807", "9223372036854775296", "99999999999999999999", "-5", "1e30"])
    func anAgeOfAnySizeIsReadWithoutTrapping(age: String) async throws {
        let origin = try Origin { request, _ in
            if request.contains("If-None-Match") {
                return "HTTP/1.1 304 Not Modified\r\nETag: \"a\"\r\nAge: \(age)\r\n\r\n"
            }
            return Self.answer("body", "ETag: \"a\"\r\nCache-Control: max-age=0\r\nAge: \(age)\r\n")
        }
        let api = api(HTTPCache(clock: clock))
        _ = try await get(api, origin.url + "/aged")
        let revalidated = try await get(api, origin.url + "/aged")
        #expect(String(decoding: revalidated.body, as: UTF8.self) == "body")
        #expect(revalidated.cacheOutcome == .revalidated)
        #expect(revalidated.headers["Age"].flatMap { Int($0) }.map { $0 >= 0 } == true, "\(revalidated.headers["Age"] ?? "none")")
        let stale = try await get(api, origin.url + "/aged", RequestOptions(cacheDirectives: CacheDirectives(maxStale: Int(Int32.max))))
        #expect(String(decoding: stale.body, as: UTF8.self) == "body")
    }

    /// Cookies that come with a 304 reach the API's jar, as a browser takes them, each field on
    /// its own (a comma inside one plants no other, where the transport tells fields apart);
    /// they are not kept with the response.
    @Test func aCookieSetByA304IsTaken() async throws {
        let origin = try Origin { request, _ in
            if request.contains("If-None-Match") {
                return "HTTP/1.1 304 Not Modified\r\nSet-Cookie: session=renewed; Path=/\r\nSet-Cookie: lang=en, planted=1; Path=/\r\n"
                    + "Cache-Control: max-age=60\r\n\r\n"
            }
            return Self.answer("page", "ETag: \"p\"\r\nCache-Control: no-cache\r\n")
        }
        let api = api(HTTPCache(clock: clock))
        _ = try await get(api, origin.url + "/page")
        #expect(try await get(api, origin.url + "/page").cacheOutcome == .revalidated)
        let hit = try await get(api, origin.url + "/page")
        #expect(hit.cacheOutcome == .hit)
        #expect(hit.headers["Set-Cookie"] == nil)
        _ = try await get(api, origin.url + "/other")
        #expect(origin.requests.items.last?.contains("Cookie: session=renewed") == true)
        let kept = Set(api.cookieJar?.all.map { "\($0.name)=\($0.value)" } ?? [])
        #expect(kept == (TestTransport.readsFieldsOneByOne ? ["session=renewed", "lang=en, planted=1"] : ["session=renewed", "lang=en", "planted=1"]))
    }

    @Test func lastModifiedIsAskedWithIfModifiedSince() async throws {
        let modified = "Sun, 06 Nov 2022 08:49:37 GMT"
        let origin = try Origin { request, _ in
            request.contains("If-Modified-Since: \(modified)") ? "HTTP/1.1 304 Not Modified\r\n\r\n"
                : Self.answer("dated", "Last-Modified: \(modified)\r\nCache-Control: no-cache\r\n")
        }
        let api = api(HTTPCache(clock: clock))
        _ = try await get(api, origin.url + "/dated")
        let second = try await get(api, origin.url + "/dated")
        #expect(second.cacheOutcome == .revalidated)
        #expect(String(decoding: second.body, as: UTF8.self) == "dated")
        #expect(origin.count == 2)
    }

    @Test func aChangedResponseReplacesTheKeptOne() async throws {
        let origin = try Origin { _, number in Self.answer("v\(number)", "ETag: \"\(number)\"\r\nCache-Control: max-age=0\r\n") }
        let api = api(HTTPCache(clock: clock))
        _ = try await get(api, origin.url + "/changing")
        let second = try await get(api, origin.url + "/changing")
        #expect(second.cacheOutcome == .miss)
        #expect(String(decoding: second.body, as: UTF8.self) == "v1")
        _ = try await get(api, origin.url + "/changing")
        #expect(origin.requests.items.last?.contains("If-None-Match: \"1\"") == true)
    }

    /// A 304 whose ETag is another's confirms another response: the kept one is not served,
    /// nor is the 304, which the caller did not ask for; the request goes again without the
    /// cache's conditions, and the caller gets that answer.
    @Test func a304ForAnotherETagIsNotAnsweredWithTheKeptResponse() async throws {
        let origin = try Origin { request, number in
            request.contains("If-None-Match") ? "HTTP/1.1 304 Not Modified\r\nETag: \"other\"\r\n\r\n"
                : Self.answer("mine \(number)", "ETag: \"mine\"\r\nCache-Control: no-cache\r\n")
        }
        let api = api(HTTPCache(clock: clock))
        _ = try await get(api, origin.url + "/confused")
        let again = try await get(api, origin.url + "/confused")
        #expect(String(decoding: again.body, as: UTF8.self) == "mine 2")
        #expect(again.cacheOutcome == .miss)
        #expect(origin.count == 3)
        #expect(origin.requests.items.last?.contains("If-None-Match") == false)
    }

    // MARK: What is not kept

    @Test func noStoreOnEitherSideKeepsNothing() async throws {
        let origin = try Origin { request, number in
            Self.answer("v\(number)", request.contains("/never") ? "Cache-Control: no-store, max-age=60\r\n" : "Cache-Control: max-age=60\r\n")
        }
        let api = api(HTTPCache(clock: clock))
        _ = try await get(api, origin.url + "/never")
        #expect(try await get(api, origin.url + "/never").cacheOutcome == .miss)
        let noStore = RequestOptions(cacheDirectives: CacheDirectives(noStore: true))
        _ = try await get(api, origin.url + "/asked", noStore)
        #expect(try await get(api, origin.url + "/asked").cacheOutcome == .miss)
        #expect(origin.count == 4)
    }

    @Test func aResponseToARequestWithAuthorizationIsKeptOnlyWhenItSaysItMayBe() async throws {
        let origin = try Origin { request, number in
            Self.answer("v\(number)", request.contains("/public") ? "Cache-Control: public, max-age=60\r\n" : "Cache-Control: max-age=60\r\n")
        }
        let delegate = SigningDelegate()
        let api = api(HTTPCache(clock: clock), delegate: delegate)
        _ = try await get(api, origin.url + "/private")
        #expect(try await get(api, origin.url + "/private").cacheOutcome == .miss)
        _ = try await get(api, origin.url + "/public")
        #expect(try await get(api, origin.url + "/public").cacheOutcome == .hit)
        #expect(origin.count == 3)
    }

    /// A server that signs in with cookies and says only `private`: what it answered one
    /// account is never served to the next one signed in on the same API, and the cookies are
    /// not written to disk.
    @Test(arguments: [false, true])
    func aResponseKeptForOneAccountsCookiesIsNotServedToAnother(onDisk: Bool) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try Origin { request, _ in
            let path = request.split(separator: " ")[1]
            if path.hasPrefix("/login?user=") {
                return Self.answer("signed in", "Set-Cookie: session=\(path.dropFirst("/login?user=".count)); Path=/\r\n")
            }
            let cookie = request.components(separatedBy: "\r\n").first { $0.hasPrefix("Cookie: session=") }
            return Self.answer("me: \(cookie?.dropFirst("Cookie: session=".count) ?? "nobody")", "Cache-Control: private, max-age=60\r\n")
        }
        let cache = onDisk ? try HTTPCache(directory: directory, clock: clock) : HTTPCache(clock: clock)
        let api = api(cache)
        func me() async throws -> (String, CacheOutcome?) {
            let response = try await get(api, origin.url + "/me")
            return (String(decoding: response.body, as: UTF8.self), response.cacheOutcome)
        }
        _ = try await get(api, origin.url + "/login?user=alice")
        #expect(try await me() == ("me: alice", .miss))
        #expect(try await me() == ("me: alice", .hit))
        _ = try await get(api, origin.url + "/login?user=bob")
        #expect(try await me() == ("me: bob", .miss))
        #expect(try await me() == ("me: bob", .hit))
        if onDisk {
            let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
            // Searched as bytes: read as text, the binary check after a body can join its last
            // letter to a combining mark, and "me: bob" was not found (once, in clean-clone CI).
            let written = files.compactMap { try? Data(contentsOf: $0) }
            #expect(written.contains { $0.range(of: Data("me: bob".utf8)) != nil } && !written.contains { $0.range(of: Data("session=".utf8)) != nil },
                    "\(written.map { String(decoding: $0, as: UTF8.self) })")
        }
        api.cookieJar?.removeAll()
        #expect(try await me() == ("me: nobody", .miss))
    }

    /// Responses to requests signed for one account, which the server lets a cache keep
    /// (`must-revalidate`): never served to another's requests, fresh or revalidated, even when
    /// the server gives both accounts the same validator and answers the other's `304`.
    @Test(arguments: [false, true])
    func aResponseKeptForOneAccountsTokenIsNotServedToAnother(onDisk: Bool) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try Origin { request, _ in
            let token = request.components(separatedBy: "\r\n").first { $0.hasPrefix("Authorization: Bearer ") }?.dropFirst("Authorization: Bearer ".count)
            let path = request.split(separator: " ")[1]
            // A version number for a validator, the same for every account's profile.
            if path == "/versioned", request.contains("If-None-Match: W/\"1\"") { return "HTTP/1.1 304 Not Modified\r\n\r\n" }
            let control = path == "/versioned" ? "must-revalidate, max-age=0\r\nETag: W/\"1\"" : "must-revalidate, max-age=60"
            return Self.answer("me: \(token ?? "nobody")", "Cache-Control: \(control)\r\n")
        }
        let cache = onDisk ? try HTTPCache(directory: directory, clock: clock) : HTTPCache(clock: clock)
        let delegate = AccountDelegate()
        let api = api(cache, delegate: delegate)
        func me(_ path: String = "/me") async -> String {
            do {
                return String(decoding: try await get(api, origin.url + path).body, as: UTF8.self)
            } catch {
                return "failed"
            }
        }
        delegate.token.withLock { $0 = "alice" }
        #expect(await me() == "me: alice")
        #expect(await me() == "me: alice")
        #expect(await me("/versioned") == "me: alice")
        #expect(await me("/versioned") == "me: alice")
        delegate.token.withLock { $0 = "bob" }
        #expect(await me() == "me: bob")
        // Alice's validator, added before the delegate signs, is taken off again once the
        // request is signed for bob: he never gets her answer, nor a 304 he did not ask for.
        #expect(await me("/versioned") == "me: bob")
        #expect(await me("/versioned") == "me: bob")
        #expect(origin.requests.items.first { $0.hasPrefix("GET /versioned") && $0.contains("Bearer bob") }?.contains("If-None-Match") == false)
        if onDisk {
            let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
            let written = files.compactMap { try? Data(contentsOf: $0) }
            #expect(!written.contains { $0.range(of: Data("Bearer".utf8)) != nil }, "\(written.map { String(decoding: $0, as: UTF8.self) })")
        }
    }

    /// What the cache keeps of a credential is its SHA-256 (a test vector of FIPS 180-4): not a
    /// 64-bit FNV-1a, whose collisions can be made and whose short keys are searched back fast.
    @Test func aCredentialIsKeptAsItsSHA256() {
        #expect(HTTPCache.digest(of: "abc") == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    /// An API that signs with a key of its own (`X-Api-Key`), named as a credential in
    /// `RedirectPolicy(sensitiveHeaders:)`: what was fetched with one key is never served to a
    /// request with another (an API sharing the cache, or the same API once its key changed) or
    /// with none, though the server says only `private`; nor is the key written to disk.
    @Test(arguments: [false, true])
    func aResponseKeptForOneAPIKeyIsNotServedToAnother(onDisk: Bool) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try Origin { request, _ in
            let field = request.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("x-api-key: ") }
            let name = field?.dropFirst("x-api-key: ".count).prefix { $0 != "-" } ?? "nobody"
            return Self.answer("me: \(name)", "Cache-Control: private, max-age=60\r\n")
        }
        let cache = onDisk ? try HTTPCache(directory: directory, clock: clock) : HTTPCache(clock: clock)
        func keyed(_ key: String?) -> AbstractAPI {
            let configuration = APIConfiguration(commonHeaders: key.map { ["X-Api-Key": $0] } ?? [:], timeout: 20, retryPolicy: .never,
                                                 redirectPolicy: RedirectPolicy(sensitiveHeaders: ["X-Api-Key"]), cache: cache)
            return AbstractAPI(configuration: configuration, transport: TestTransport.make(), responseQueue: .global())
        }
        func me(_ api: AbstractAPI, _ options: RequestOptions = RequestOptions()) async throws -> (String, CacheOutcome?) {
            let response = try await get(api, origin.url + "/me", options)
            return (String(decoding: response.body, as: UTF8.self), response.cacheOutcome)
        }
        let (alice, bob, nobody) = (keyed("alice-key-7f3a9c"), keyed("bob-key-2d81e4"), keyed(nil))
        #expect(try await me(alice) == ("me: alice", .miss))
        #expect(try await me(alice) == ("me: alice", .hit))
        #expect(try await me(bob) == ("me: bob", .miss))
        #expect(try await me(bob) == ("me: bob", .hit))
        #expect(try await me(nobody) == ("me: nobody", .miss))
        #expect(try await me(bob) == ("me: bob", .miss))
        // A request's own policy, which names no header (`.never`), forgets none of the API's.
        #expect(try await me(alice, RequestOptions(redirectPolicy: .never)) == ("me: alice", .miss))
        #expect(try await me(nobody) == ("me: nobody", .miss))
        if onDisk {
            let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
            let written = files.compactMap { try? Data(contentsOf: $0) }
            #expect(written.contains { $0.range(of: Data("me: ".utf8)) != nil } && !written.contains { $0.range(of: Data("-key-".utf8)) != nil },
                    "\(written.map { String(decoding: $0, as: UTF8.self) })")
        }
    }

    @Test func theDelegateSignsTheRevalidation() async throws {
        let origin = try Origin { request, _ in
            request.contains("If-None-Match") ? "HTTP/1.1 304 Not Modified\r\n\r\n"
                : Self.answer("signed", "ETag: \"s\"\r\nCache-Control: must-revalidate, max-age=0\r\n")
        }
        let delegate = SigningDelegate()
        let api = api(HTTPCache(clock: clock), delegate: delegate)
        _ = try await get(api, origin.url + "/account")
        let second = try await get(api, origin.url + "/account")
        #expect(second.cacheOutcome == .revalidated)
        // The conditions were there when the delegate signed.
        #expect(delegate.signed.items == ["", "\"s\""])
        #expect(origin.requests.items.allSatisfy { $0.contains("Authorization: Bearer token") })
    }

    /// The lookup made as a request is prepared (for the conditions its signature must cover)
    /// is the one the caching transport uses: a response on disk is read once per request.
    @Test(arguments: [false, true])
    func eachRequestLooksItsURLUpOnce(onDisk: Bool) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try Origin { _, number in Self.answer("v\(number)", "Cache-Control: max-age=60\r\n") }
        let cache = onDisk ? try HTTPCache(directory: directory, clock: clock) : HTTPCache(clock: clock)
        let api = api(cache)
        #expect(try await get(api, origin.url + "/items").cacheOutcome == .miss)
        #expect(cache.lookupCount == 1)
        #expect(try await get(api, origin.url + "/items").cacheOutcome == .hit)
        #expect(cache.lookupCount == 2)
    }

    /// A delegate that sends the request to another URL when it signs it: the answer is the one
    /// kept for the URL sent, not for the one asked.
    @Test func aRequestTheDelegateSendsElsewhereIsAnsweredForWhereItGoes() async throws {
        let origin = try Origin { request, number in
            Self.answer("\(ConnectionReuseTests.name(of: request)) v\(number)", "Cache-Control: max-age=60\r\n")
        }
        let delegate = RewritingDelegate()
        let api = api(HTTPCache(clock: clock), delegate: delegate)
        #expect(String(decoding: try await get(api, origin.url + "/b").body, as: UTF8.self) == "b v0")
        let rewritten = try await get(api, origin.url + "/a")
        #expect(rewritten.cacheOutcome == .hit)
        #expect(String(decoding: rewritten.body, as: UTF8.self) == "b v0")
        #expect(origin.count == 1)
        withExtendedLifetime(delegate) {}
    }

    @Test func bodiesPastTheLimitAreNotKeptAndTheLeastRecentlyUsedGoFirst() async throws {
        let large = String(repeating: "x", count: 5_000)
        let origin = try Origin { request, number in
            Self.answer(request.contains("/large") ? large : "v\(number)" + String(repeating: "-", count: 1_000), "Cache-Control: max-age=60\r\n")
        }
        let cache = HTTPCache(maximumBytes: 4_000, maximumResponseBytes: 4_096, clock: clock)
        let api = api(cache)
        _ = try await get(api, origin.url + "/large")
        #expect(try await get(api, origin.url + "/large").cacheOutcome == .miss)
        for path in ["/a", "/b", "/c"] { _ = try await get(api, origin.url + path) }
        _ = try await get(api, origin.url + "/a")   // /a used: /b is the oldest now
        _ = try await get(api, origin.url + "/d")
        #expect(cache.byteCount <= 4_000)
        #expect(try await get(api, origin.url + "/a").cacheOutcome == .hit)
        #expect(try await get(api, origin.url + "/b").cacheOutcome == .miss)
    }

    // MARK: Vary and invalidation

    @Test func varyMatchesOnlyTheSameValuesAndVaryStarNever() async throws {
        let origin = try Origin { request, number in
            Self.answer("v\(number)", request.contains("/star") ? "Vary: *\r\nCache-Control: max-age=60\r\n" : "Vary: Accept-Language\r\nCache-Control: max-age=60\r\n")
        }
        let english = APIConfiguration(commonHeaders: ["Accept-Language": "en"], timeout: 20, retryPolicy: .never, cache: HTTPCache(clock: clock))
        var french = english
        french.commonHeaders = ["Accept-Language": "fr"]
        let en = AbstractAPI(configuration: english, transport: TestTransport.make(), responseQueue: .global())
        let fr = AbstractAPI(configuration: french, transport: TestTransport.make(), responseQueue: .global())
        _ = try await get(en, origin.url + "/greeting")
        #expect(try await get(en, origin.url + "/greeting").cacheOutcome == .hit)
        #expect(try await get(fr, origin.url + "/greeting").cacheOutcome == .miss)
        _ = try await get(en, origin.url + "/star")
        #expect(try await get(en, origin.url + "/star").cacheOutcome == .miss)
        #expect(origin.count == 4)
    }

    @Test func aSuccessfulUnsafeRequestForgetsItsURLAndItsLocations() async throws {
        let origin = try Origin { request, number in
            if request.hasPrefix("POST") { return Self.answer("made", status: "201 Created", "Location: /items/7\r\n") }
            if request.hasPrefix("DELETE") { return Self.answer("no", status: "500 Internal Server Error") }
            return Self.answer("v\(number)", "Cache-Control: max-age=60\r\n")
        }
        let api = api(HTTPCache(clock: clock))
        for path in ["/items", "/items/7", "/other"] { _ = try await get(api, origin.url + path) }
        _ = try await (api.request(route: .post(origin.url + "/items")) as Promise<Data>).value
        #expect(try await get(api, origin.url + "/items").cacheOutcome == .miss)
        #expect(try await get(api, origin.url + "/items/7").cacheOutcome == .miss)
        #expect(try await get(api, origin.url + "/other").cacheOutcome == .hit)
        // A failed one forgets nothing.
        _ = await (api.request(route: .delete(origin.url + "/other")) as Promise<Data>).result
        #expect(try await get(api, origin.url + "/other").cacheOutcome == .hit)
    }

    @Test func otherOriginsInALocationAreNotForgotten() {
        let url = URL(string: "https://shop.example/items")!
        let urls = CacheRules.invalidated(by: url, headers: ["location": "https://evil.example/items", "content-location": "/items/1"])
        #expect(urls == ["https://shop.example/items", "https://shop.example/items/1"])
    }

    // MARK: Request directives

    @Test func requestDirectivesChooseBetweenTheKeptResponseAndTheServer() async throws {
        let origin = try Origin { request, number in
            request.contains("If-None-Match") ? "HTTP/1.1 304 Not Modified\r\n\r\n"
                : Self.answer("v\(number)", "ETag: \"e\"\r\nCache-Control: max-age=60\r\n")
        }
        let api = api(HTTPCache(clock: clock))
        _ = try await get(api, origin.url + "/d")
        let noCache = try await get(api, origin.url + "/d", RequestOptions(cacheDirectives: CacheDirectives(noCache: true)))
        #expect(noCache.cacheOutcome == .revalidated)
        clock.advance(by: 10)
        #expect(try await get(api, origin.url + "/d", RequestOptions(cacheDirectives: CacheDirectives(maxAge: 5))).cacheOutcome == .revalidated)
        #expect(try await get(api, origin.url + "/d", RequestOptions(cacheDirectives: CacheDirectives(minFresh: 100))).cacheOutcome == .revalidated)
        #expect(try await get(api, origin.url + "/d").cacheOutcome == .hit)
        #expect(origin.count == 4)
    }

    @Test func maxStaleServesAStaleResponseUnlessItMustBeRevalidated() async throws {
        let origin = try Origin { request, number in
            Self.answer("v\(number)", request.contains("/strict") ? "Cache-Control: max-age=10, must-revalidate\r\n" : "Cache-Control: max-age=10\r\n")
        }
        let api = api(HTTPCache(clock: clock))
        _ = try await get(api, origin.url + "/lenient")
        _ = try await get(api, origin.url + "/strict")
        clock.advance(by: 30)
        let lenient = RequestOptions(cacheDirectives: CacheDirectives(maxStale: 60))
        let stale = try await get(api, origin.url + "/lenient", lenient)
        #expect(stale.cacheOutcome == .stale)
        #expect(String(decoding: stale.body, as: UTF8.self) == "v0")
        #expect(try await get(api, origin.url + "/strict", lenient).cacheOutcome == .miss)
        #expect(try await get(api, origin.url + "/lenient", RequestOptions(cacheDirectives: CacheDirectives(maxStale: 5))).cacheOutcome == .miss)
    }

    @Test func onlyIfCachedFailsWithA504WhenNothingKeptWillDo() async throws {
        let origin = try Origin { _, number in Self.answer("v\(number)", "Cache-Control: max-age=10\r\n") }
        let api = api(HTTPCache(clock: clock))
        let offline = RequestOptions(cacheDirectives: CacheDirectives(onlyIfCached: true))
        let nothing = await (api.request(route: .get(origin.url + "/offline"), options: offline) as Promise<Data>).result
        guard case .failure(APIError.unacceptableStatus(let failure)) = nothing else { Issue.record("expected a 504, got \(nothing)"); return }
        #expect(failure.statusCode == 504)
        _ = try await get(api, origin.url + "/offline")
        #expect(try await get(api, origin.url + "/offline", offline).cacheOutcome == .hit)
        clock.advance(by: 11)
        let stale = await (api.request(route: .get(origin.url + "/offline"), options: offline) as Promise<Data>).result
        guard case .failure(APIError.unacceptableStatus(let again)) = stale else { Issue.record("expected a 504, got \(stale)"); return }
        #expect(again.statusCode == 504)
        #expect(origin.count == 1)
    }

    @Test func aHeadIsAnsweredFromAFreshGet() async throws {
        let origin = try Origin { _, number in Self.answer("v\(number)", "Cache-Control: max-age=60\r\n") }
        let api = api(HTTPCache(clock: clock))
        _ = try await get(api, origin.url + "/page")
        let head: Response = try await api.request(route: Route(method: .head, url: origin.url + "/page")).value
        #expect(head.cacheOutcome == .hit)
        #expect(head.body.isEmpty)
        #expect(origin.count == 1)
    }

    /// A HEAD's 200 with the kept response's validator refreshes it (RFC 9111, §4.3.5); one with
    /// another validator does not.
    @Test func aHeadWithTheSameETagFreshensTheKeptGet() async throws {
        let origin = try Origin { request, number in
            if request.hasPrefix("HEAD /same") { return "HTTP/1.1 200 OK\r\nETag: \"x\"\r\nCache-Control: max-age=100\r\nContent-Length: 2\r\n\r\n" }
            if request.hasPrefix("HEAD /other") { return "HTTP/1.1 200 OK\r\nETag: \"y\"\r\nCache-Control: max-age=100\r\nContent-Length: 4\r\n\r\n" }
            return Self.answer("v\(number)", "ETag: \"x\"\r\nCache-Control: max-age=10\r\n")
        }
        let api = api(HTTPCache(clock: clock))
        _ = try await get(api, origin.url + "/same")
        _ = try await get(api, origin.url + "/other")
        clock.advance(by: 20)
        for path in ["/same", "/other"] {
            let head: Response = try await api.request(route: .head(origin.url + path)).value
            #expect(head.cacheOutcome == .miss)
        }
        let refreshed = try await get(api, origin.url + "/same")
        #expect(refreshed.cacheOutcome == .hit)
        #expect(String(decoding: refreshed.body, as: UTF8.self) == "v0")
        #expect(try await get(api, origin.url + "/other").cacheOutcome != .hit)
    }

    @Test func theLoggerSaysWhatTheCacheDid() async throws {
        let origin = try Origin { _, _ in Self.answer("logged", "Cache-Control: max-age=60\r\n") }
        let lines = Recorder<String>()
        var configuration = APIConfiguration(timeout: 20, retryPolicy: .never, cache: HTTPCache(clock: clock))
        configuration.plugins = [LoggerPlugin(level: .response) { lines.append($0) }]
        let api = AbstractAPI(configuration: configuration, transport: TestTransport.make(), responseQueue: .global())
        _ = try await get(api, origin.url + "/logged")
        _ = try await get(api, origin.url + "/logged")
        #expect(lines.items.contains { $0.contains("cache miss") })
        #expect(lines.items.contains { $0.contains("cache hit") })
    }
}

/// Signs each request with a bearer token, noting the `If-None-Match` it had when signed.
final class SigningDelegate: APIDelegate, Sendable {
    let signed = Recorder<String>()

    func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
        signed.append(request.value(forHTTPHeaderField: "If-None-Match") ?? "")
        request.setValue("Bearer token", forHTTPHeaderField: "Authorization")
    }
}

/// Signs each request for the account whose token it holds.
final class AccountDelegate: APIDelegate, Sendable {
    let token = Locked("")

    func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
        request.setValue("Bearer " + token.withLock { $0 }, forHTTPHeaderField: "Authorization")
    }
}

/// Sends a request for `/a` to `/b` as it signs it.
final class RewritingDelegate: APIDelegate, Sendable {
    func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
        guard let url = request.url, url.path == "/a" else { return }
        request.url = URL(string: url.absoluteString.replacingOccurrences(of: "/a", with: "/b"))
    }
}
