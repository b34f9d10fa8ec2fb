import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A shared ``HTTPCache`` meeting a transport over a session of the caller's
/// (`URLSessionTransport(session:)`), whose own cookie storage signs the user in below Tern:
/// the cache never saw those cookies, so a `private` page fetched for one account was kept as
/// an answer to nobody in particular, and served to the next account on that session, and to
/// any other API sharing the cache. The cookies a caller's session sends for a URL are now part
/// of the trust its answers are kept under, and a caller's session answers only its own
/// requests: its delegate and its credential storage are not Tern's to see.
///
/// The caller's session is URLSession by nature; the other API runs on the transport the run
/// tests.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CallersSessionCacheAttackTests {
    /// A server that signs in whoever asks `/login?user=NAME` with a `sid` cookie, and answers
    /// `/me` with the account its cookie names, `private` for ten minutes, as cookie-session
    /// servers do.
    static func origin() throws -> HTTPCacheTests.Origin {
        try HTTPCacheTests.Origin { request, _ in
            let head = request.split(separator: "\r\n")
            let target = head.first?.split(separator: " ").dropFirst().first.map(String.init) ?? ""
            if let user = target.components(separatedBy: "user=").dropFirst().first {
                return HTTPCacheTests.answer("signed in", "Set-Cookie: sid=\(user); Path=/\r\n")
            }
            let cookie = head.first { $0.lowercased().hasPrefix("cookie:") }
            let account = cookie?.components(separatedBy: "sid=").dropFirst().first ?? "nobody"
            return HTTPCacheTests.answer("me: \(account)", "Cache-Control: private, max-age=600\r\n")
        }
    }

    /// A session of the caller's, with a cookie storage of its own that takes every cookie.
    static func callersSession() throws -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        try #require(configuration.httpCookieStorage != nil, "an ephemeral configuration has no cookie storage here")
        configuration.httpCookieAcceptPolicy = .always
        configuration.httpShouldSetCookies = true
        return URLSession(configuration: configuration)
    }

    /// An API over `transport`, keeping no cookies of its own (the session keeps them), whose
    /// answers go in `cache`.
    static func api(_ transport: (any Transport)?, _ cache: HTTPCache) -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cookies: .none, cache: cache),
                    transport: transport, responseQueue: .global())
    }

    /// The body of `route`'s answer, and whether the cache gave it.
    static func ask(_ api: AbstractAPI, _ url: String) async throws -> (String, CacheOutcome?) {
        let response: Response = try await api.request(route: .get(url)).value
        return (String(decoding: response.body, as: UTF8.self), response.cacheOutcome)
    }

    @Test func anAccountsPrivatePageIsNeverAnotherAPIsAnswer() async throws {
        let origin = try Self.origin()
        let session = try Self.callersSession()
        defer { session.invalidateAndCancel() }
        let cache = HTTPCache()
        let signedIn = Self.api(URLSessionTransport(session: session), cache)
        _ = try await Self.ask(signedIn, origin.url + "/login?user=alice")
        let (alice, first) = try await Self.ask(signedIn, origin.url + "/me")
        // Control: the session sent its cookie, and the page was kept for it.
        #expect(alice == "me: alice")
        #expect(first == .miss)
        #expect(try await Self.ask(signedIn, origin.url + "/me") == ("me: alice", .hit))

        let other = Self.api(TestTransport.make(), cache)
        let (answer, outcome) = try await Self.ask(other, origin.url + "/me")
        #expect(answer == "me: nobody", "another API was served the caller's session's account (\(String(describing: outcome)))")
        let anotherSession = try Self.callersSession()
        defer { anotherSession.invalidateAndCancel() }
        let (third, _) = try await Self.ask(Self.api(URLSessionTransport(session: anotherSession), cache), origin.url + "/me")
        #expect(third == "me: nobody")
    }

    /// A caller's session whose delegate answers the server's challenge with a password: Tern
    /// never sees the `Authorization` it sends, so the answer counts as the session's alone.
    @Test func anAnswerToAChallengeTheSessionAnsweredIsNeverAnotherAPIsAnswer() async throws {
        let origin = try HTTPCacheTests.Origin { request, _ in
            guard request.lowercased().contains("\r\nauthorization: basic ") else {
                return HTTPCacheTests.answer("who are you?", status: "401 Unauthorized", "WWW-Authenticate: Basic realm=\"r\"\r\n")
            }
            return HTTPCacheTests.answer("alice's secrets", "Cache-Control: max-age=600\r\n")
        }
        let session = URLSession(configuration: .ephemeral, delegate: Answering(), delegateQueue: nil)
        defer { session.invalidateAndCancel() }
        let cache = HTTPCache()
        #expect(try await Self.ask(Self.api(URLSessionTransport(session: session), cache), origin.url + "/secrets") == ("alice's secrets", .miss))

        let other = Self.api(TestTransport.make(), cache)
        let answer = await (other.request(route: .get(origin.url + "/secrets")) as Promise<Response>).result
        guard case .failure(let error) = answer else {
            Issue.record("another API was served what the caller's session's password got: \(answer)")
            return
        }
        #expect((error as? APIError)?.statusCode == 401, "\(error)")
    }

    /// Answers every challenge with Alice's password.
    final class Answering: NSObject, URLSessionTaskDelegate, Sendable {
        func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
            completionHandler(.useCredential, URLCredential(user: "alice", password: "s3cret", persistence: .forSession))
        }
    }

    /// Alice signs out on the session, and Bob signs in on it (`next` "bob"), or nobody does:
    /// what Alice was answered is not the next account's answer, nor nobody's.
    @Test(arguments: ["bob", nil])
    func theNextAccountOnTheSameSessionIsNotServedThePreviousOnes(next: String?) async throws {
        let origin = try Self.origin()
        let session = try Self.callersSession()
        defer { session.invalidateAndCancel() }
        let api = Self.api(URLSessionTransport(session: session), HTTPCache())
        _ = try await Self.ask(api, origin.url + "/login?user=alice")
        #expect(try await Self.ask(api, origin.url + "/me") == ("me: alice", .miss))
        let storage = try #require(session.configuration.httpCookieStorage)
        for cookie in storage.cookies ?? [] { storage.deleteCookie(cookie) }
        if let next { _ = try await Self.ask(api, origin.url + "/login?user=" + next) }
        let (answer, outcome) = try await Self.ask(api, origin.url + "/me")
        #expect(answer == "me: " + (next ?? "nobody"), "served Alice's page (\(String(describing: outcome)))")
        #expect(outcome == .miss)
    }
}
