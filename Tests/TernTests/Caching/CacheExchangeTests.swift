import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import TernTransport

/// The cache's side of one exchange, as a value: events in, actions out.
@Suite(.onTestThreads) struct CacheExchangeTests {
    let url = URL(string: "https://shop.example/items")!
    let date = Date(timeIntervalSince1970: 1_000_000)

    func exchange(_ mode: CacheExchange.Mode, limit: Int = 1_000, method: String = "GET") -> CacheExchange {
        var request = URLRequest(url: url)
        request.httpMethod = method
        return CacheExchange(mode: mode, request: request, requestDate: date, maximumBodyBytes: limit)
    }

    func kept(_ fields: [String: String]) -> CachedResponse {
        CachedResponse(url: url.absoluteString, status: 200, headers: fields, body: Data("kept".utf8), requestDate: date, responseDate: date, varying: [:])
    }

    @Test func aCacheableAnswerIsKeptWholeOnceItEnds() {
        var exchange = exchange(.store)
        let head = exchange.head(status: 200, fields: ["cache-control": "max-age=60"], cookies: nil, announcedLength: 4, at: date)
        #expect(head.handOn && head.change == nil)
        let first = exchange.chunk(Data("ab".utf8)), second = exchange.chunk(Data("cd".utf8))
        #expect(first && second)
        let (change, ending) = exchange.end(error: nil, at: date)
        guard case .keep(let response)? = change, case .asItCame(let metrics) = ending else { Issue.record("\(change as Any) \(ending)"); return }
        #expect(response.body == Data("abcd".utf8))
        #expect(metrics?.cacheOutcome == .miss)   // the transport reported none
    }

    @Test func aBodyPastTheLimitAStopOrAFailureKeepsNothing() {
        for ending in ["limit", "stop", "error"] {
            var exchange = exchange(.store, limit: 3)
            _ = exchange.head(status: 200, fields: ["cache-control": "max-age=60"], cookies: nil, announcedLength: -1, at: date)
            switch ending {
            case "limit": _ = exchange.chunk(Data("abcd".utf8))
            case "stop": exchange.pipelineDecided(.stop)
            default: break
            }
            #expect(exchange.end(error: ending == "error" ? URLError(.networkConnectionLost) : nil, at: date).change == nil, "\(ending)")
        }
    }

    @Test func a304IsHeldAndAnsweredWithTheKeptResponseRefreshed() {
        var exchange = exchange(.revalidate(kept(["etag": "\"k\"", "cache-control": "no-cache"])))
        let head = exchange.head(status: 304, fields: ["etag": "\"k\"", "cache-control": "max-age=9"], cookies: .init(joined: "a=1, b=2", fields: ["a=1, b=2"]), announcedLength: 0, at: date)
        #expect(!head.handOn && head.change == nil)
        let stray = exchange.chunk(Data("stray".utf8))
        #expect(!stray)
        let held = exchange.metrics(TransferMetrics(statusCode: 304))
        #expect(held == nil)
        let (change, ending) = exchange.end(error: nil, at: date)
        guard case .kept(let response, let cookies, let metrics) = ending else { Issue.record("\(ending)"); return }
        #expect(change == .update(kept(["etag": "\"k\"", "cache-control": "no-cache"]), to: response))
        #expect(response.body == Data("kept".utf8))
        #expect(response.headers["cache-control"] == "max-age=9")
        #expect(cookies == .init(joined: "a=1, b=2", fields: ["a=1, b=2"]))
        #expect(metrics.cacheOutcome == .revalidated && metrics.statusCode == 304)
    }

    @Test func a304ForAnotherTagIsSentAgainWithoutConditions() {
        let keptResponse = kept(["etag": "\"k\""])
        var exchange = exchange(.revalidate(keptResponse))
        let head = exchange.head(status: 304, fields: ["etag": "\"other\""], cookies: nil, announcedLength: 0, at: date)
        #expect(!head.handOn)
        #expect(head.change == .forget([keptResponse.url]))
        let (handsOnAChunk, handsOnMetrics) = (exchange.chunk(Data("stray".utf8)), exchange.metrics(TransferMetrics(url: nil, statusCode: 304)))
        #expect(!handsOnAChunk && handsOnMetrics == nil)
        let (change, ending) = exchange.end(error: nil, at: date)
        #expect(change == nil)
        guard case .resend = ending else { Issue.record("\(ending)"); return }
    }

    @Test func aSuccessfulUnsafeRequestForgetsAndAFailedOneDoesNot() {
        var made = exchange(.invalidate, method: "POST")
        let forgotten = made.head(status: 201, fields: ["location": "/items/7"], cookies: nil, announcedLength: 0, at: date).change
        #expect(forgotten == .forget(["https://shop.example/items", "https://shop.example/items/7"]))
        let metrics = made.metrics(TransferMetrics())
        #expect(metrics?.cacheOutcome == .miss, "answered by the server")
        var failed = exchange(.invalidate, method: "DELETE")
        let kept = failed.head(status: 500, fields: [:], cookies: nil, announcedLength: 0, at: date).change
        #expect(kept == nil)
    }

    @Test func aHeadRefreshesOnlyWithTheKeptValidator() {
        let keptResponse = kept(["etag": "\"k\"", "cache-control": "max-age=1"])
        var same = exchange(.freshen(keptResponse), method: "HEAD")
        guard case .update(keptResponse, let refreshed)? = same.head(status: 200, fields: ["etag": "\"k\"", "cache-control": "max-age=99"], cookies: nil,
                                                         announcedLength: 4, at: date).change else { Issue.record("no refresh"); return }
        #expect(refreshed.headers["cache-control"] == "max-age=99" && refreshed.body == keptResponse.body)
        var weak = exchange(.freshen(kept(["etag": "W/\"k\""])), method: "HEAD")
        let weakChange = weak.head(status: 200, fields: ["etag": "W/\"k\""], cookies: nil, announcedLength: 4, at: date).change
        #expect(weakChange == nil)
    }

    /// A `HEAD` that freshens the kept response into one the cache may not keep makes it forget
    /// the response: `no-store`, or a `Vary: *` no later request can match.
    @Test(arguments: [["cache-control": "no-store"], ["vary": "*"]])
    func aHeadThatForbidsKeepingForgets(_ extra: [String: String]) {
        let keptResponse = kept(["etag": "\"k\"", "cache-control": "max-age=1"])
        var exchange = exchange(.freshen(keptResponse), method: "HEAD")
        let fields = extra.merging(["etag": "\"k\""]) { old, _ in old }
        let change = exchange.head(status: 200, fields: fields, cookies: nil, announcedLength: 4, at: date).change
        #expect(change == .forget([url.absoluteString]))
    }
}
