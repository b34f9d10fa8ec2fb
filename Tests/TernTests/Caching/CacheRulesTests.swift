import Foundation
import Testing
@testable import TernTransport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The cache's rules as values: `Cache-Control` as RFC 9111 writes it, HTTP dates in their three
/// forms, a response's age and freshness.
@Suite(.onTestThreads) struct CacheRulesTests {
    @Test func cacheControlReadsArgumentsQuotesAndRepeats() {
        let control = CacheControl(["No-Cache, max-age=60, private=\"Set-Cookie, X-A\"", "max-age=5, max-stale, s-maxage=abc, max-age=99999999999"])
        #expect(control.has("no-cache"))
        #expect(control.seconds("max-age") == 60)
        #expect(control.directives["private"] == .some("Set-Cookie, X-A"))
        #expect(control.maxStale == .some(nil))
        #expect(control.seconds("s-maxage") == nil)
        #expect(CacheControl(["max-age=99999999999"]).seconds("max-age") == Int(Int32.max))
        #expect(CacheControl(["max-stale=30"]).maxStale == .some(30))
        #expect(CacheControl([""]).directives.isEmpty)
        #expect(CacheControl([",,  ,"]).directives.isEmpty)
    }

    @Test func httpDatesInAllThreeForms() {
        let expected = Date(timeIntervalSince1970: 784_111_777)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == expected)
        #expect(HTTPDate.format(expected) == "Sun, 06 Nov 1994 08:49:37 GMT")
        for bad in ["0", "-1", "", "tomorrow", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT"] {
            #expect(HTTPDate.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func ageCountsTheServersAgeTheDelayAndTheTimeKept() {
        let sent = Date(timeIntervalSince1970: 1_000_000)
        let came = sent.addingTimeInterval(2)
        var response = CachedResponse(url: "u", status: 200, headers: ["age": "10", "date": HTTPDate.format(sent.addingTimeInterval(-5))],
                                      body: Data(), requestDate: sent, responseDate: came, varying: [:])
        // The age given plus the request's delay (12) beats the server's clock behind (7).
        #expect(response.age(at: came.addingTimeInterval(30)) == 42)
        response.headers["age"] = nil
        #expect(response.age(at: came) == 7)
        response.headers = ["cache-control": "max-age=60", "expires": HTTPDate.format(sent)]
        #expect(response.freshnessLifetime == 60)
        response.headers = ["expires": HTTPDate.format(came.addingTimeInterval(100)), "date": HTTPDate.format(came)]
        #expect(response.freshnessLifetime == 100)
        response.headers = ["cache-control": "max-age=oops"]
        #expect(response.freshnessLifetime == 0)
    }

    @Test func aStaleResponseWithoutValidatorGoesToTheServer() {
        let now = Date()
        let kept = CachedResponse(url: "u", status: 200, headers: ["cache-control": "max-age=1"], body: Data(),
                                  requestDate: now.addingTimeInterval(-10), responseDate: now.addingTimeInterval(-10), varying: [:])
        let request = CacheRules.Request(URLRequest(url: URL(string: "http://a.example/u")!))
        #expect(CacheRules.decide(request, kept: kept, now: now) == .network)
        var reload = URLRequest(url: URL(string: "http://a.example/u")!)
        reload.cachePolicy = .returnCacheDataElseLoad
        #expect(CacheRules.decide(CacheRules.Request(reload), kept: kept, now: now) == .stale(kept))
        reload.cachePolicy = .reloadIgnoringLocalCacheData
        #expect(CacheRules.decide(CacheRules.Request(reload), kept: kept, now: now) == .network)
    }

    @Test func aKeyIsTheURLWithItsSchemeAndHostInLowerCaseAndNoFragment() throws {
        func key(_ text: String) throws -> String { CacheKey.of(try #require(URL(string: text))) }
        // Written so already: as it is, the path's case kept.
        #expect(try key("https://shop.example/Items?Page=2") == "https://shop.example/Items?Page=2")
        #expect(try key("http://a.example") == "http://a.example")
        #expect(try key("http://a.example:8080/x") == "http://a.example:8080/x")
        // Otherwise taken apart and written again.
        #expect(try key("HTTPS://Shop.EXAMPLE/Items#top") == "https://shop.example/Items")
        #expect(try key("https://shop.example/items#top") == "https://shop.example/items")
        #expect(try key("http://A.example") == "http://a.example")
        #expect(try key("https://USER@shop.example/x") == key("https://USER@shop.example/x#y"))
    }

    /// Spellings the transports send as one URL are one key (helper attack95a: `:80` and dot
    /// segments gave two, and an unsafe request to one spelling left the other kept).
    @Test func spellingsSentAsOneURLAreOneKey() throws {
        func key(_ text: String) throws -> String { CacheKey.of(try #require(URL(string: text))) }
        #expect(try key("http://a.example:80/x") == "http://a.example/x")
        #expect(try key("https://a.example:443/x?q=1") == "https://a.example/x?q=1")
        #expect(try key("http://a.example:443/x") == "http://a.example:443/x")
        #expect(try key("https://a.example:80/x") == "https://a.example:80/x")
        #expect(try key("https://a.example/a/../b") == "https://a.example/b")
        #expect(try key("https://a.example/a/./b/..") == "https://a.example/a/")
        #expect(try key("https://a.example/../b?next=/a/../c") == "https://a.example/b?next=/a/../c")
        #expect(try key("https://a.example/.well-known/x") == "https://a.example/.well-known/x")
        #expect(try key("https://a.example/a/%2E%2E/b") == "https://a.example/a/%2E%2E/b")
        let url = try #require(URL(string: "http://shop.example/items"))
        #expect(CacheRules.invalidated(by: url, headers: ["location": "http://shop.example:80/items/2"]) == ["http://shop.example/items", "http://shop.example/items/2"])
    }
}

/// The fast reading of IMF-fixdates agrees with the calendar's over four centuries of dates.
@Suite(.onTestThreads) struct HTTPDateTests {
    @Test func fixdatesReadAsTheCalendarReadsThem() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0)!
        var generator = SplitMix(seed: 0xDA7E)
        for _ in 0..<2_000 {
            let seconds = TimeInterval(Int.random(in: -2_208_988_800...7_258_118_400, using: &generator))   // 1900 to 2200
            let date = Date(timeIntervalSince1970: seconds)
            let text = HTTPDate.format(date)
            #expect(HTTPDate.parse(text) == date, "\(text)")
            // The same date, spaced otherwise, read the slow way.
            #expect(HTTPDate.parse(text.replacingOccurrences(of: ", ", with: ",  ")) == date, "\(text)")
        }
        #expect(HTTPDate.parse("Sun, 06 Xyz 1994 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 0a Nov 1994 08:49:37 GMT") == nil)
    }
}
