import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the cache's word in the metrics says, and that no exchange it made is left out (found
/// by helper attack54 as MetricsBreakTests: the first two failed before, the third said `.miss`
/// where `CacheOutcome` promised a server's answer).
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct MetricsCacheOutcomeTests {
    typealias Seam = MetricsSeamAttackTests

    /// `onlyIfCached` with nothing kept: the cache answers `504` itself, without the network
    /// (CachingResponses.md). ``CacheOutcome/miss`` says so, and its metrics say nothing was sent.
    @Test func anOnlyIfCached504IsTheCachesOwnMiss() async throws {
        let count = Seam.Counter()
        let server = try Seam.server(count: count) { _, _ in RawServer.Connection.response("never asked") }
        defer { server.stop() }
        let log = Seam.Log()
        let api = Seam.api(cache: HTTPCache(), plugins: [log])
        let offline = RequestOptions(cacheDirectives: CacheDirectives(onlyIfCached: true))
        let result = await (api.request(route: .get(server.baseURL + "/offline"), options: offline) as Promise<Response>).result
        guard case .failure(APIError.unacceptableStatus) = result else {
            Issue.record("\(result)")
            return
        }
        #expect(await eventually { log.answers.count == 1 })
        let answer = try #require(log.responses.first)
        #expect(count.value == 0 && answer.statusCode == 504)
        #expect(answer.metrics.map(\.bytesReceived) == [0] && answer.metrics.map(\.total) == [0])
        #expect(answer.cacheOutcome == .miss, "\(answer.metrics)")
    }

    /// A revalidation the server answers with a `304` for another response (another ETag): the
    /// cache sends the request again without its conditions, and the answer is the second
    /// exchange's. Both went over the wire, and the metrics hold one per exchange
    /// (ResponsesAndErrors.md).
    @Test func aNotModifiedForAnotherResponseIsAnExchangeToo() async throws {
        let count = Seam.Counter()
        let server = try Seam.server(count: count) { request, number in
            switch number {
            case 1: RawServer.Connection.response("one", headers: "ETag: \"v1\"\r\nCache-Control: no-cache\r\n")
            case 2 where request.lowercased().contains("if-none-match: \"v1\""): "HTTP/1.1 304 Not Modified\r\nETag: \"v2\"\r\n\r\n"
            default: RawServer.Connection.response("two", headers: "ETag: \"v2\"\r\nCache-Control: no-cache\r\n")
            }
        }
        defer { server.stop() }
        let api = Seam.api(cache: HTTPCache())
        let url = server.baseURL + "/changed"
        let _: Response = try await api.request(route: .get(url)).value
        let second: Response = try await api.request(route: .get(url)).value
        #expect(count.value == 3 && second.body == Data("two".utf8) && second.cacheOutcome == .miss)
        guard TestTransport.isCurl else { return }
        #expect(second.metrics.map(\.statusCode) == [304, 200], "\(second.metrics)")
    }
    /// Requests the cache leaves to the server (an unsafe method, a `GET` with conditions of its
    /// own) through an API that has a cache: ``Response/cacheOutcome`` is `nil` only "when the
    /// API has none", and these were answered by the server.
    @Test func aRequestTheCacheLeavesToTheServerSaysAMiss() async throws {
        let count = Seam.Counter()
        let server = try Seam.server(count: count) { request, _ in
            request.lowercased().contains("if-none-match:") ? "HTTP/1.1 304 Not Modified\r\nETag: \"mine\"\r\n\r\n" : RawServer.Connection.response("done")
        }
        defer { server.stop() }
        let api = Seam.api(cache: HTTPCache())
        let posted: Response = try await api.request(route: .post(server.baseURL + "/things")).value
        let own = RequestOptions(headers: ["If-None-Match": "\"mine\""], validation: .acceptAll)
        let conditional: Response = try await api.request(route: .get(server.baseURL + "/things"), options: own).value
        #expect(count.value == 2 && posted.statusCode == 200 && conditional.statusCode == 304)
        #expect(posted.cacheOutcome == .miss, "\(posted.metrics)")
        #expect(conditional.cacheOutcome == .miss, "\(conditional.metrics)")
    }
}
