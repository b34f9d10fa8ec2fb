import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An API's own key (`X-Api-Key`), named once in `RedirectPolicy(sensitiveHeaders:)`, where the
/// cache meets it: set by an adapter, by the delegate's signing, by a request's own headers
/// under a policy of its own; rotated by a refresh between a response kept and its
/// revalidation; named in one case and sent in another; two keys, one absent; a `Vary` on it.
/// A response fetched with one key's value answers only the same value, in memory and on disk,
/// and no file of the cache's directory ever holds a key in clear.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CredentialHeaderCacheAttackTests {
    typealias Origin = HTTPCacheTests.Origin

    let clock = TestClock()

    /// A directory for a cache on disk, removed by `body`'s caller.
    static func scratchDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("tern-cache-\(UUID().uuidString)")
    }

    func cache(onDisk: Bool, _ directory: URL) throws -> HTTPCache {
        onDisk ? try HTTPCache(directory: directory, clock: clock) : HTTPCache(clock: clock)
    }

    func api(_ cache: HTTPCache, headers: HTTPHeaders = [:], sensitive: Set<String> = ["X-Api-Key"],
             adapters: [any RequestAdapter] = []) -> AbstractAPI {
        let configuration = APIConfiguration(commonHeaders: headers, timeout: 20, retryPolicy: .never,
                                             redirectPolicy: RedirectPolicy(sensitiveHeaders: sensitive), adapters: adapters, cache: cache)
        return AbstractAPI(configuration: configuration, transport: TestTransport.make(), responseQueue: .global())
    }

    /// The body and the cache's outcome of `GET url`.
    func get(_ api: AbstractAPI, _ url: String, _ options: RequestOptions = RequestOptions()) async throws -> (String, CacheOutcome?) {
        let response: Response = try await api.request(route: .get(url), options: options).value
        return (String(decoding: response.body, as: UTF8.self), response.cacheOutcome)
    }

    /// The account a key (`alice-…`) is for: what the server answers, which never holds the key.
    static func account(_ key: String?) -> String {
        key.map { String($0.prefix { $0 != "-" }) } ?? "-"
    }

    /// A server answering `/me` with the account of each header of `names` it was sent, kept
    /// 60 s (`private`, as servers that sign in say).
    static func accountOrigin(_ names: [String] = ["x-api-key"], extra: String = "") throws -> Origin {
        try Origin { request, _ in
            let who = names.map { account(CredentialHeaderAttack.header($0, in: request)) }.joined(separator: ",")
            return HTTPCacheTests.answer("me: \(who)", "Cache-Control: private, max-age=60\r\n" + extra)
        }
    }

    /// However the key reaches the request (an adapter, the delegate, the request's own headers
    /// under a request's own policy that alone names it), what one key fetched answers only that
    /// key: another key, or none, is sent to the server.
    @Test(arguments: ["adapter", "delegate", "request"], [false, true])
    func theKeyBindsTheEntryWhereverItComesFrom(source: String, onDisk: Bool) async throws {
        let directory = Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try Self.accountOrigin()
        let cache = try cache(onDisk: onDisk, directory)
        let (alice, bob) = ("alice-\(UUID().uuidString)", "bob-\(UUID().uuidString)")
        /// An API sending `key` (none when `nil`) the way `source` says.
        func keyed(_ key: String?) -> (AbstractAPI, RequestOptions) {
            switch source {
            case "adapter":
                return (api(cache, adapters: key.map { [KeyAdapter(name: "x-API-key", key: $0)] } ?? []), RequestOptions())
            case "delegate":
                let api = api(cache)
                api.delegate = key.map { RotatingKeyDelegate(name: "X-API-KEY", keys: [$0]) }
                return (api, RequestOptions())
            default:
                // The configuration names nothing: only the request's own policy does.
                return (api(cache, sensitive: []), RequestOptions(headers: key.map { ["X-Api-Key": $0] } ?? [:],
                                                                  redirectPolicy: RedirectPolicy(sensitiveHeaders: ["x-api-key"])))
            }
        }
        func me(_ key: String?) async throws -> (String, CacheOutcome?) {
            let (api, options) = keyed(key)
            let delegate = api.delegate
            defer { withExtendedLifetime(delegate) {} }
            return try await get(api, origin.url + "/me", options)
        }
        #expect(try await me(alice) == ("me: alice", .miss))
        #expect(try await me(alice) == ("me: alice", .hit))
        #expect(try await me(bob) == ("me: bob", .miss))
        #expect(try await me(nil) == ("me: -", .miss))
        #expect(try await me(alice) == ("me: alice", .miss))
        #expect(origin.count == 4)
        if onDisk { #expect(CredentialHeaderAttack.leaks(of: [alice, bob], under: directory).isEmpty) }
    }

    /// The key named `x-api-key` and sent `X-API-KEY`, beside a second named key that one
    /// request sends and another lacks: a value under one name never answers the same value
    /// under the other, nor the two together.
    @Test(arguments: [false, true])
    func twoNamedKeysOneAbsentAreNotOneKey(onDisk: Bool) async throws {
        let directory = Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try Self.accountOrigin(["x-api-key", "x-tenant"])
        let cache = try cache(onDisk: onDisk, directory)
        let value = "shared-\(UUID().uuidString)"
        func me(_ headers: HTTPHeaders) async throws -> (String, CacheOutcome?) {
            try await get(api(cache, headers: headers, sensitive: ["x-api-key", "X-TENANT"]), origin.url + "/me")
        }
        #expect(try await me(["X-API-KEY": value]) == ("me: shared,-", .miss))
        #expect(try await me(["x-api-key": value]) == ("me: shared,-", .hit))
        #expect(try await me(["X-Tenant": value]) == ("me: -,shared", .miss))
        #expect(try await me(["X-Api-Key": value, "X-Tenant": value]) == ("me: shared,shared", .miss))
        #expect(try await me(["X-Api-Key": value]) == ("me: shared,-", .miss))
        #expect(origin.count == 4)
        if onDisk { #expect(CredentialHeaderAttack.leaks(of: [value], under: directory).isEmpty) }
    }

    /// A kept response, due for revalidation (an `ETag`, `max-age=0`), asked for once the old
    /// key is refused: the revalidation goes with the old key and is answered 401; the delegate
    /// refreshes, and the replay, signed with the new key, goes without the old key's
    /// conditions and is answered with the new key's account, never the old one's body.
    @Test(arguments: [false, true])
    func aKeyRotatedByARefreshNeverRevalidatesTheOldKeysEntry(onDisk: Bool) async throws {
        let directory = Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (old, new) = ("old-key-\(UUID().uuidString)", "new-key-\(UUID().uuidString)")
        let revoked = Recorder<String>()
        let origin = try Origin { request, _ in
            let key = CredentialHeaderAttack.header("x-api-key", in: request) ?? "-"
            let account = Self.account(key)
            if revoked.items.contains(key) { return HTTPCacheTests.answer("revoked", status: "401 Unauthorized") }
            // A server that answers 304 to any condition, whoever asks: only the cache can keep
            // one key's body from another.
            if CredentialHeaderAttack.header("if-none-match", in: request) != nil {
                return "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nCache-Control: private, max-age=0\r\n\r\n"
            }
            return HTTPCacheTests.answer("me: \(account)", "ETag: \"v1\"\r\nCache-Control: private, max-age=0\r\n")
        }
        let cache = try cache(onDisk: onDisk, directory)
        let api = api(cache)
        let delegate = RotatingKeyDelegate(name: "x-Api-Key", keys: [old, new])
        api.delegate = delegate
        #expect(try await get(api, origin.url + "/me") == ("me: old", .miss))
        #expect(try await get(api, origin.url + "/me") == ("me: old", .revalidated))
        revoked.append(old)
        let (body, outcome) = try await get(api, origin.url + "/me")
        #expect(body == "me: new")
        #expect(outcome == .miss)
        #expect(delegate.refreshes.withLock { $0 } == 1)
        let sent = origin.requests.items
        #expect(sent.count == 4, "\(sent)")
        // The revalidation the old key asked for, then the new key's request without conditions.
        if sent.count == 4 {
            #expect(CredentialHeaderAttack.header("x-api-key", in: sent[2]) == old)
            #expect(CredentialHeaderAttack.header("if-none-match", in: sent[2]) == "\"v1\"")
            #expect(CredentialHeaderAttack.header("x-api-key", in: sent[3]) == new)
            #expect(CredentialHeaderAttack.header("if-none-match", in: sent[3]) == nil, "\(sent[3])")
        }
        // The new key's entry answers it, revalidated; the old key's is gone.
        #expect(try await get(api, origin.url + "/me") == ("me: new", .revalidated))
        if onDisk { #expect(CredentialHeaderAttack.leaks(of: [old, new], under: directory).isEmpty) }
    }

    /// Another API sharing the cache, with the old key still: after the rotation its request
    /// revalidates nothing of the new key's (the conditions would have made the server's 304
    /// the old key's answer to the new key's body), and the other way round.
    @Test(arguments: [false, true])
    func aRevalidationSentWithAnotherKeyServesNothingOfTheEntrys(onDisk: Bool) async throws {
        let directory = Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try Origin { request, _ in
            let account = Self.account(CredentialHeaderAttack.header("x-api-key", in: request))
            if CredentialHeaderAttack.header("if-none-match", in: request) != nil {
                return "HTTP/1.1 304 Not Modified\r\nETag: \"same\"\r\nCache-Control: max-age=0\r\n\r\n"
            }
            return HTTPCacheTests.answer("me: \(account)", "ETag: \"same\"\r\nCache-Control: max-age=0\r\n")
        }
        let cache = try cache(onDisk: onDisk, directory)
        let (alice, bob) = ("alice-\(UUID().uuidString)", "bob-\(UUID().uuidString)")
        let aliceAPI = api(cache, headers: ["X-Api-Key": alice]), bobAPI = api(cache, headers: ["X-API-KEY": bob])
        #expect(try await get(aliceAPI, origin.url + "/me") == ("me: alice", .miss))
        #expect(try await get(bobAPI, origin.url + "/me") == ("me: bob", .miss))
        #expect(try await get(aliceAPI, origin.url + "/me") == ("me: alice", .miss))
        #expect(try await get(aliceAPI, origin.url + "/me") == ("me: alice", .revalidated))
        // A HEAD with bob's key freshens nothing of alice's.
        let head: Response = try await bobAPI.request(route: .head(origin.url + "/me")).value
        #expect(head.statusCode == 200)
        #expect(try await get(bobAPI, origin.url + "/me") == ("me: bob", .miss))
        let conditional = origin.requests.items.filter { CredentialHeaderAttack.header("if-none-match", in: $0) != nil }
        #expect(conditional.allSatisfy { CredentialHeaderAttack.header("x-api-key", in: $0) == alice },
                "a condition went with another key than its entry's: \(conditional)")
        if onDisk { #expect(CredentialHeaderAttack.leaks(of: [alice, bob], under: directory).isEmpty) }
    }

    /// A response that says `Vary: X-Api-Key` (and echoes nothing), kept for two keys one after
    /// the other, on disk: the files hold digests, never a key; each key is answered its own.
    @Test func aResponseVaryingOnTheKeyKeepsNoKeyOnDisk() async throws {
        let directory = Self.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try Self.accountOrigin(extra: "Vary: X-Api-Key, Accept\r\n")
        let cache = try HTTPCache(directory: directory, clock: clock)
        let (alice, bob) = ("alice-\(UUID().uuidString)", "bob-\(UUID().uuidString)")
        let scenes: [(key: String, named: Set<String>)] = [(alice, ["X-Api-Key"]), (bob, []), (alice, ["X-Api-Key"])]
        for (key, named) in scenes {
            // Named or not, a field `Vary` names is kept as a digest.
            _ = try await get(api(cache, headers: ["X-Api-Key": key], sensitive: named), origin.url + "/me")
            #expect(CredentialHeaderAttack.leaks(of: [alice, bob], under: directory).isEmpty)
            #expect(!CredentialHeaderAttack.files(under: directory).isEmpty)
        }
        #expect(try await get(api(cache, headers: ["X-Api-Key": alice]), origin.url + "/me") == ("me: alice", .hit))
        #expect(try await get(api(cache, headers: ["X-Api-Key": bob]), origin.url + "/me") == ("me: bob", .miss))
    }
}
