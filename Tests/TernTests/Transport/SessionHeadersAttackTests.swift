import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A configuration's `httpAdditionalHeaders` holding a credential (`Authorization`, a key the
/// redirect policy names), given to `URLSessionTransport(configuration:)`: the session added
/// them to every task below Tern, so a server's redirect to another origin received the token
/// Tern had just removed from the hop, and the cache, which never saw them, served one
/// account's private page to another's API. Tern now adds those headers itself, where the
/// request has none of the name, and none that carries a credential to a hop that left the
/// origin; the cache keeps answers under them.
///
/// URLSession by nature, whatever transport the run tests.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct SessionHeadersAttackTests {
    /// A transport whose session's configuration adds `headers` to every request.
    static func transport(_ headers: [String: String]) -> URLSessionTransport {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = headers
        return URLSessionTransport(configuration: configuration)
    }

    /// The value of `name` in the request head `request`, if it has one.
    static func field(_ name: String, in request: String) -> String? {
        request.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
            .map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
    }

    @Test func aRedirectToAnotherOriginGetsNoneOfTheSessionsCredentials() async throws {
        let elsewhere = try HTTPCacheTests.Origin { _, _ in HTTPCacheTests.answer("grabbed") }
        let home = try HTTPCacheTests.Origin { request, _ in
            if request.hasPrefix("GET /start ") { return HTTPCacheTests.answer("", status: "302 Found", "Location: /next\r\n") }
            return HTTPCacheTests.answer("", status: "302 Found", "Location: \(elsewhere.url)/grab\r\n")
        }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never,
                                                              redirectPolicy: RedirectPolicy(sensitiveHeaders: ["X-Api-Key"])),
                              transport: Self.transport(["Authorization": "Bearer alice", "X-Api-Key": "k3y", "X-Client": "app/1"]),
                              responseQueue: .global())
        let response: Response = try await api.request(route: .get(home.url + "/start")).value
        #expect(String(decoding: response.body, as: UTF8.self) == "grabbed")
        // Control: at home, both hops carry everything the session's configuration names.
        let atHome = home.requests.items
        try #require(atHome.count == 2)
        for request in atHome {
            #expect(Self.field("Authorization", in: request) == "Bearer alice")
            #expect(Self.field("X-Api-Key", in: request) == "k3y")
            #expect(Self.field("X-Client", in: request) == "app/1")
        }
        let grab = try #require(elsewhere.requests.items.first)
        #expect(Self.field("Authorization", in: grab) == nil, "the session's token went to another origin: \(grab)")
        #expect(Self.field("X-Api-Key", in: grab) == nil, "the session's key went to another origin: \(grab)")
        #expect(Self.field("X-Client", in: grab) == "app/1")
    }

    /// A request's own value of a field wins over the session's.
    @Test func aRequestsOwnHeaderWinsOverTheSessions() async throws {
        let origin = try HTTPCacheTests.Origin { _, _ in HTTPCacheTests.answer("ok") }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never),
                              transport: Self.transport(["X-Client": "app/1"]), responseQueue: .global())
        let _: Response = try await api.request(route: .get(origin.url + "/a"), options: RequestOptions(headers: ["X-Client": "mine"])).value
        #expect(Self.field("X-Client", in: origin.requests.items.first ?? "") == "mine")
    }

    @Test func anAccountsPrivatePageIsNeverAnotherSessionsAnswer() async throws {
        let origin = try HTTPCacheTests.Origin { request, _ in
            HTTPCacheTests.answer("me: " + (Self.field("Authorization", in: request) ?? "nobody"), "Cache-Control: private, max-age=600\r\n")
        }
        let cache = HTTPCache()
        func api(_ token: String) -> AbstractAPI {
            AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: cache),
                        transport: Self.transport(["Authorization": "Bearer " + token]), responseQueue: .global())
        }
        let alice: Response = try await api("alice").request(route: .get(origin.url + "/me")).value
        #expect(String(decoding: alice.body, as: UTF8.self) == "me: Bearer alice")
        let bob: Response = try await api("bob").request(route: .get(origin.url + "/me")).value
        #expect(String(decoding: bob.body, as: UTF8.self) == "me: Bearer bob", "\(String(describing: bob.cacheOutcome))")
    }
}
