import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `304` that names another version by `Last-Modified` alone (no `ETag` on either side), as a
/// server or a proxy that answers every `If-Modified-Since` with a `304` sends: RFC 9111,
/// §4.3.4, lets a `304` update only the stored response whose strong validator it carries (a
/// `Last-Modified` at least a second before the response's `Date` is strong, RFC 9110,
/// §8.8.2.2). Tern compared only `ETag`s there, where its `HEAD` path compared `Last-Modified`
/// too: the kept body was served, and kept under the new date, so that every later
/// revalidation asked `If-Modified-Since` the new date and the old body stayed for good.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CacheRevalidationBreakTests {
    @Test func a304NamingAnotherLastModifiedDoesNotServeTheKeptBody() async throws {
        let old = "Tue, 01 Dec 2026 10:00:00 GMT", new = "Tue, 01 Dec 2026 11:00:00 GMT"
        let origin = try HTTPCacheTests.Origin { request, number in
            if request.contains("If-Modified-Since") {
                return "HTTP/1.1 304 Not Modified\r\nDate: Tue, 01 Dec 2026 12:00:00 GMT\r\nLast-Modified: \(new)\r\nCache-Control: max-age=0\r\n\r\n"
            }
            return HTTPCacheTests.answer(number == 0 ? "version of 10:00" : "version of 11:00",
                                         "Date: Tue, 01 Dec 2026 12:00:00 GMT\r\nLast-Modified: \(number == 0 ? old : new)\r\nCache-Control: max-age=0\r\n")
        }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, cache: HTTPCache(clock: TestClock())),
                              transport: TestTransport.make(), responseQueue: .global())
        func get() async throws -> Response { try await api.request(route: .get(origin.url + "/page")).value }
        #expect(String(decoding: try await get().body, as: UTF8.self) == "version of 10:00")
        let second = try await get()
        #expect(String(decoding: second.body, as: UTF8.self) == "version of 11:00", "\(String(describing: second.cacheOutcome))")
        // And later: asked If-Modified-Since the new date, as the server's 304 named it.
        let third = try await get()
        #expect(String(decoding: third.body, as: UTF8.self) == "version of 11:00", "\(String(describing: third.cacheOutcome))")
    }
}
