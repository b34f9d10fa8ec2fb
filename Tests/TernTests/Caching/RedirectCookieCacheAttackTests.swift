import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A session cookie replaced by a redirect on the way (`302` with `Set-Cookie`) to a URL whose
/// answer the cache keeps for the old cookie. CachingResponses.md: "a response to a request
/// that sent cookies or `Authorization` answers only requests that send the same [...] what a
/// server answered while one account was signed in is never served once another is".
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RedirectCookieCacheAttackTests {
    @Test(arguments: [false, true]) func aCookieSetByARedirectIsSentAndNotAnsweredFromTheOldCookiesEntry(onDisk: Bool) async throws {
        let server = try KeepingServer { request, _ in
            let target = KeepingServer.target(of: request)
            let cookie = ResumeLie.header("Cookie", in: request) ?? "none"
            switch target {
            case "/login":
                return "HTTP/1.1 204 No Content\r\nSet-Cookie: session=alice; Path=/\r\n\r\n"
            case "/switch":
                return "HTTP/1.1 302 Found\r\nSet-Cookie: session=bob; Path=/\r\nLocation: /me\r\nContent-Length: 0\r\n\r\n"
            case "/signout":
                return "HTTP/1.1 303 See Other\r\nSet-Cookie: session=; Path=/; Max-Age=0\r\nLocation: /me\r\nContent-Length: 0\r\n\r\n"
            default:
                return RawServer.Connection.response(cookie, headers: "Cache-Control: public, max-age=600\r\n")
            }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-redirect-cookie-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = onDisk ? try HTTPCache(directory: directory) : HTTPCache()
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: cache), transport: TestTransport.make(),
                              responseQueue: .global())
        _ = try await (api.request(route: .get(server.baseURL + "/login")) as Promise<Response>).value
        let first: String = try await api.request(route: .get(server.baseURL + "/me")).value
        #expect(first == "session=alice")
        let second: String = try await api.request(route: .get(server.baseURL + "/switch")).value
        #expect(second == "session=bob", "after the redirect set bob's cookie, /me answered \(second); requests \(server.targets)")
        let third: String = try await api.request(route: .get(server.baseURL + "/me")).value
        #expect(third == "session=bob", "answered \(third); requests \(server.targets)")
        // Signed out by a redirect that expires the cookie: /me goes with no cookie, and is not
        // answered with bob's kept page.
        let fourth: String = try await api.request(route: .get(server.baseURL + "/signout")).value
        #expect(fourth == "none", "after signing out, /me answered \(fourth); requests \(server.targets)")
    }
}
