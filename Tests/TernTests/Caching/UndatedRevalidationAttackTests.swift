import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting

/// A server without a clock (it sends no `Date`, as CachingResponses.md's Testing section asks
/// of a test's server), whose kept response goes stale and is revalidated with a `304`.
///
/// Promised (CachingResponses.md): "Once a kept response is stale, the cache asks the server
/// whether it is still good …; a `304` refreshes it"; "A response that came without a `Date` is
/// kept with the time it came"; freshness "comes from `max-age`". RFC 9110 §6.6.1: a recipient
/// that caches a message without a `Date` records the time it came as its `Date`.
///
/// What goes wrong: the `200` is kept with the `Date` the cache wrote for it (the time it
/// came), but the `304`, which has no `Date` either, is not given one: `CachedResponse.update`
/// keeps the old `Date`, so the refreshed response's age is counted from the first fetch (its
/// apparent age, `responseDate - date`, is the whole time since). Refreshed for `max-age=60`,
/// it is stale at once: every later request goes to the server again, and is answered with a
/// `304`, however fresh the server just said the response is. (Browsers and OkHttp, which take
/// the time a response came where it has no `Date`, refresh it.)
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct UndatedRevalidationAttackTests {
    @Test(arguments: [false, true]) func aNotModifiedWithoutADateRefreshesTheKeptResponse(onDisk: Bool) async throws {
        let requests = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                requests.append(request)
                let answer = request.contains("\r\nIf-None-Match:")
                    ? "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nCache-Control: max-age=60\r\n\r\n"
                    : RawServer.Connection.response("v1", headers: "ETag: \"v1\"\r\nCache-Control: max-age=60\r\n")
                guard connection.send(answer) else { return }
            }
        }
        defer { server.stop() }
        let directory = URL(fileURLWithPath: "/tmp/attack87-undated-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = TestClock()
        let cache = onDisk ? try HTTPCache(directory: directory, clock: clock) : HTTPCache(clock: clock)
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: cache),
                              transport: TestTransport.make(), responseQueue: .global())
        let url = server.baseURL + "/doc"
        let first: Response = try await api.request(route: .get(url)).value
        #expect(first.cacheOutcome == .miss)
        // Stale after a minute and a half: asked of the server, which says it is still good for
        // another minute.
        clock.advance(by: 90)
        let revalidated: Response = try await api.request(route: .get(url)).value
        #expect(revalidated.cacheOutcome == .revalidated)
        // Ten seconds into that minute: fresh.
        clock.advance(by: 10)
        let next: Response = try await api.request(route: .get(url)).value
        #expect(next.cacheOutcome == .hit, "refreshed 10 s ago for 60 s, the response was \(String(describing: next.cacheOutcome)), Age \(next.headers["Age"] ?? "-")")
        #expect(requests.items.count == 2, "the server was asked \(requests.items.count) times")
    }
}
