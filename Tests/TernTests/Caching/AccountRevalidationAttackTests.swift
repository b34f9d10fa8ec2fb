import Foundation
import Testing
import Tern
import TernTesting

/// An answer kept for anyone (asked without credentials), revalidated by a request signed in
/// to an account: the server's `304` speaks to that account (its own `X-Account`, its cursor in
/// `Link`, `private`). Updated with those fields and still kept for anyone, the entry answered
/// the next anonymous request, and every other account, with Alice's fields: what a server
/// answered one account was served to another (CachingResponses.md promises never). Over a
/// `304` and over a `HEAD` that freshens the kept `GET`; the entry is Alice's from then on.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct AccountRevalidationAttackTests {
    enum Credential: CaseIterable { case cookie, authorization }

    @Test(arguments: Credential.allCases, [false, true]) func anAccountsRevalidationIsNotServedToOthers(credential: Credential, byHead: Bool) async throws {
        // `public` lets a signed answer be kept (CacheRules.mayKeep); a cookie's is kept as it is.
        let control = credential == .authorization ? "public, max-age=600" : "private, max-age=600"
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let account = request.contains("alice") ? "alice" : "anyone"
                let revalidates = request.contains("If-None-Match: \"1\"") || request.hasPrefix("HEAD ")
                let answer = if revalidates {
                    "HTTP/1.1 \(request.hasPrefix("HEAD ") ? "200 OK" : "304 Not Modified")\r\nETag: \"1\"\r\nContent-Length: 4\r\n"
                        + "Cache-Control: \(control)\r\nX-Account: \(account)\r\n\r\n"
                } else {
                    RawServer.Connection.response("page", headers: "ETag: \"1\"\r\nCache-Control: max-age=0\r\nX-Account: \(account)\r\n")
                }
                guard connection.send(answer) else { return }
            }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: HTTPCache()),
                              transport: TestTransport.make(), responseQueue: .global())
        let url = server.baseURL + "/feed"
        let alice = RequestOptions(headers: credential == .cookie ? ["Cookie": "session=alice"] : ["Authorization": "Bearer alice"])
        let first: Response = try await api.request(route: .get(url)).value
        #expect(first.headers["X-Account"] == "anyone")
        if byHead {
            let head: Response = try await api.request(route: .head(url), options: alice).value
            #expect(head.headers["X-Account"] == "alice")
        } else {
            let revalidated: Response = try await api.request(route: .get(url), options: alice).value
            #expect(revalidated.headers["X-Account"] == "alice" && revalidated.cacheOutcome == .revalidated)
        }
        // Kept for Alice from then on: it answers her.
        let again: Response = try await api.request(route: .get(url), options: alice).value
        #expect(again.headers["X-Account"] == "alice" && again.cacheOutcome == .hit, "\(String(describing: again.cacheOutcome))")
        let anyone: Response = try await api.request(route: .get(url)).value
        #expect(anyone.headers["X-Account"] == "anyone", "served \(anyone.headers["X-Account"] ?? "none"), \(String(describing: anyone.cacheOutcome))")
        let bob = RequestOptions(headers: credential == .cookie ? ["Cookie": "session=bob"] : ["Authorization": "Bearer bob"])
        let other: Response = try await api.request(route: .get(url), options: bob).value
        #expect(other.headers["X-Account"] == "anyone", "served \(other.headers["X-Account"] ?? "none"), \(String(describing: other.cacheOutcome))")
        withExtendedLifetime(api) {}
    }
}
