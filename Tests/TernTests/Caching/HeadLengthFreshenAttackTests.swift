import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting

/// A `HEAD` whose `200` has the kept `GET`'s validator but another `Content-Length`.
///
/// Promised (`HTTPCache`, "follows RFC 9111"; `CacheExchange.Mode.freshen`): a `HEAD`'s `200`
/// freshens the kept `GET` only as §4.3.5 allows: when its validators match "and, if the HEAD
/// response has a Content-Length header field, the value of Content-Length matches that of the
/// stored response"; otherwise the stored response is to be taken as stale. A document that
/// changed within the second its `Last-Modified` names (the same validator, a longer body) was
/// freshened all the same: the `HEAD`'s `max-age=600` went onto the old body, and the next
/// `GET` was answered from the cache with it, as fresh, never asking the server, which had said
/// the body is now 11 bytes long, not 5.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct HeadLengthFreshenAttackTests {
    @Test func aHeadThatStatesAnotherLengthDoesNotFreshenTheKeptGet() async throws {
        let modified = "Wed, 02 Dec 2026 10:00:00 GMT"
        let gets = Locked(0)
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                if request.hasPrefix("HEAD ") {
                    // The document now: 11 bytes, changed within the same second.
                    connection.send("HTTP/1.1 200 OK\r\nLast-Modified: \(modified)\r\nCache-Control: max-age=600\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\n")
                } else {
                    let body = gets.withLock { count in defer { count += 1 }; return count == 0 ? "hello" : "hello world" }
                    connection.send(RawServer.Connection.response(body, headers: "Last-Modified: \(modified)\r\nCache-Control: max-age=10\r\n"))
                }
            }
        }
        defer { server.stop() }
        let clock = TestClock()
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: HTTPCache(clock: clock)),
                              transport: TestTransport.make(), responseQueue: .global())
        let url = server.baseURL + "/doc"
        let first: Response = try await api.request(route: .get(url)).value
        #expect(String(decoding: first.body, as: UTF8.self) == "hello")
        clock.advance(by: 20)   // the kept GET is stale
        let head: Response = try await api.request(route: .head(url)).value
        #expect(head.statusCode == 200)
        let second: Response = try await api.request(route: .get(url)).value
        #expect(String(decoding: second.body, as: UTF8.self) == "hello world",
                "answered \(second.cacheOutcome.map { "\($0)" } ?? "?") with the old body, though the HEAD said 11 bytes")
        #expect(gets.withLock { $0 } == 2)
    }
}
