import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting

/// A `304` that says `Cache-Control: no-store`.
///
/// Promised (`HTTPCache`, "follows RFC 9111"): a response that says `no-store` is not kept
/// (§5.2.2.5: a cache "MUST NOT store any part of either the immediate request or the
/// response"), and what was kept is served only while fresh. A `304` updates the kept
/// response's fields with its own (§4.3.4), `Cache-Control` among them; one that says
/// `no-store` left the kept response stored all the same, now saying `no-store` and no
/// `max-age`, which made it fresh by the heuristic of its old `Last-Modified` (a tenth of its
/// age, a day at most): the next `GET` was answered from the cache, the server never asked,
/// though it had just said not to store the response at all. (Browsers drop the entry.)
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct NotModifiedNoStoreAttackTests {
    /// An API with a cache that has kept `server`'s `/doc` (`v0`), then seen it go stale.
    static func keptAndStale(_ server: RawServer) async throws -> (AbstractAPI, String) {
        let clock = TestClock()
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: HTTPCache(clock: clock)),
                              transport: TestTransport.make(), responseQueue: .global())
        let url = server.baseURL + "/doc"
        let first: Response = try await api.request(route: .get(url)).value
        #expect(String(decoding: first.body, as: UTF8.self) == "v0")
        clock.advance(by: 20)
        return (api, url)
    }

    @Test func aNotModifiedThatSaysNoStoreLeavesNothingToServe() async throws {
        let modified = HTTPDate.format(Date().addingTimeInterval(-365 * 86_400))
        let requests = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                requests.append(request)
                let number = requests.items.count - 1
                let answer = if request.contains("\r\nIf-Modified-Since:") {
                    "HTTP/1.1 304 Not Modified\r\nLast-Modified: \(modified)\r\nCache-Control: no-store\r\nDate: \(HTTPDate.format(Date()))\r\n\r\n"
                } else {
                    RawServer.Connection.response("v\(number)", headers: "Last-Modified: \(modified)\r\nCache-Control: max-age=10\r\nDate: \(HTTPDate.format(Date()))\r\n")
                }
                guard connection.send(answer) else { return }
            }
        }
        defer { server.stop() }
        // Stale: revalidated, and the server says not to store it any more.
        let (api, url) = try await Self.keptAndStale(server)
        let revalidated: Response = try await api.request(route: .get(url)).value
        #expect(revalidated.cacheOutcome == .revalidated)
        let third: Response = try await api.request(route: .get(url)).value
        #expect(third.cacheOutcome != .hit, "answered from the cache with \(String(decoding: third.body, as: UTF8.self)) after a 304 that said no-store")
        #expect(requests.items.count == 3)
    }

    /// The same from a `HEAD`'s `200` with the kept `GET`'s validators, which freshens it
    /// (§4.3.5): one that says `no-store` makes the cache forget it.
    @Test func aHeadThatSaysNoStoreLeavesNothingToServe() async throws {
        let modified = HTTPDate.format(Date().addingTimeInterval(-365 * 86_400))
        let gets = Locked(0)
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let answer = if request.hasPrefix("HEAD ") {
                    "HTTP/1.1 200 OK\r\nETag: \"x\"\r\nLast-Modified: \(modified)\r\nCache-Control: no-store\r\nContent-Length: 2\r\n\r\n"
                } else {
                    RawServer.Connection.response("v\(gets.withLock { count in defer { count += 1 }; return count })",
                                                  headers: "ETag: \"x\"\r\nLast-Modified: \(modified)\r\nCache-Control: max-age=10\r\n")
                }
                guard connection.send(answer) else { return }
            }
        }
        defer { server.stop() }
        let (api, url) = try await Self.keptAndStale(server)
        let head: Response = try await api.request(route: .head(url)).value
        #expect(head.statusCode == 200)
        let second: Response = try await api.request(route: .get(url)).value
        #expect(second.cacheOutcome != .hit, "answered from the cache with \(String(decoding: second.body, as: UTF8.self)) after a HEAD that said no-store")
        #expect(gets.withLock { $0 } == 2)
    }
}
