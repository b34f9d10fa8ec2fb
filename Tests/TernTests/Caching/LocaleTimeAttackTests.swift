// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Glibc
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting

/// HTTP dates and field names read in a process whose user lives far from UTC and speaks
/// Turkish or German: `TZ` 14 hours ahead of UTC (Kiritimati) or 11 behind (Niue), `LANG` and
/// `LC_ALL` set to `tr_TR.UTF-8` (where `I` lowercases to a dotless `ı`) or `de_DE.UTF-8`, and
/// the C library told to follow them (`setlocale`), as an app with a user interface does. Set in
/// a child process (an exit test). A cache's freshness from `Expires`, `Date` and
/// `Last-Modified`, a revalidation from `ETAG` and `LAST-MODIFIED` written in capitals, a
/// cookie's `EXPIRES` and a `Retry-After` date each come out as they do in UTC and English.
@Suite(.onTestThreads, .exitTest) struct LocaleTimeAttackTests {
    /// An origin that answers each path with its own dates, stamped when asked.
    static func origin() throws -> HTTPCacheTests.Origin {
        try HTTPCacheTests.Origin { request, number in
            let now = Date()
            let date = { (offset: TimeInterval) in HTTPDate.format(now.addingTimeInterval(offset)) }
            let path = request.split(separator: " ").dropFirst().first.map(String.init) ?? ""
            switch path {
            case "/expires":
                return HTTPCacheTests.answer("expires \(number)", "Date: \(date(0))\r\nExpires: \(date(600))\r\n")
            case "/expires-no-date":
                return HTTPCacheTests.answer("expires-no-date \(number)", "Expires: \(date(600))\r\n")
            case "/expired":
                return HTTPCacheTests.answer("expired \(number)", "Date: \(date(0))\r\nExpires: \(date(-600))\r\n")
            case "/capitals":
                return HTTPCacheTests.answer("capitals \(number)", "DATE: \(date(0))\r\nEXPIRES: \(date(600))\r\n")
            case "/heuristic":
                // Modified ten days ago: fresh for a tenth of that, a day.
                return HTTPCacheTests.answer("heuristic \(number)", "Date: \(date(0))\r\nLast-Modified: \(date(-864_000))\r\n")
            case "/heuristic-capitals":
                return HTTPCacheTests.answer("heuristic-capitals \(number)", "DATE: \(date(0))\r\nLAST-MODIFIED: \(date(-864_000))\r\n")
            case "/validators":
                if request.contains("If-None-Match: \"v1\"\r\n") {
                    return "HTTP/1.1 304 Not Modified\r\nETAG: \"v1\"\r\nDATE: \(date(0))\r\n\r\n"
                }
                return HTTPCacheTests.answer("validators \(number)",
                                             "CACHE-CONTROL: no-cache\r\nETAG: \"v1\"\r\nLAST-MODIFIED: \(date(-3600))\r\nDATE: \(date(0))\r\n")
            case "/cookies":
                return HTTPCacheTests.answer("cookies \(number)", "Cache-Control: no-store\r\n"
                    + "Set-Cookie: future=1; Expires=\(date(3600)); Path=/\r\n"
                    + "Set-Cookie: past=1; Expires=\(date(-3600)); Path=/\r\n"
                    + "Set-Cookie: pastCapitals=1; EXPIRES=\(date(-3600)); PATH=/\r\n"
                    + "Set-Cookie: futureCapitals=1; EXPIRES=\(date(3600)); PATH=/\r\n"
                    + "Set-Cookie: gone=1; MAX-AGE=0; PATH=/\r\n")
            default:
                return HTTPCacheTests.answer("unknown", status: "404 Not Found")
            }
        }
    }

    @Test(arguments: [("tr_TR.UTF-8", "Pacific/Kiritimati", 50_400), ("de_DE.UTF-8", "Pacific/Niue", -39_600)])
    func datesAndFieldNamesReadAsInUTCAndEnglish(locale: String, zone: String, offset: Int) async throws {
        let origin = try Self.origin()
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                [url = origin.url as String, locale = locale as String, zone = zone as String] in
                setenv("LANG", locale, 1)
                setenv("LC_ALL", locale, 1)
                setenv("TZ", zone, 1)
                tzset()
                _ = setlocale(LC_ALL, "")
                let jar = CookieJar()
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cookies: .shared(jar), cache: HTTPCache()),
                                      transport: TestTransport.make(), responseQueue: .global())
                func get(_ path: String) async -> String {
                    switch await (api.request(route: .get(url + path)) as Promise<Response>).result {
                    case .success(let response):
                        return "\(String(decoding: response.body, as: UTF8.self))/\(response.cacheOutcome.map(\.rawValue) ?? "none")"
                    case .failure(let error):
                        return "\(path)=\(error)"
                    }
                }
                var outcomes = ["\(TimeZone.current.secondsFromGMT())"]
                for path in ["/expires", "/expires-no-date", "/expired", "/capitals", "/heuristic", "/heuristic-capitals", "/validators"] {
                    outcomes += [await get(path), await get(path)]
                }
                outcomes.append(await get("/cookies"))
                outcomes.append(jar.all.map(\.name).sorted().joined(separator: ","))
                let now = Date()
                let retryAfter = RetryPolicy.retryAfter(HTTPDate.format(now.addingTimeInterval(120)), now: now)
                outcomes.append(retryAfter.map { "\(Int($0.rounded()))" } ?? "nil")
                print(outcomes.joined(separator: "|"))
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        // The child lived where it was told: otherwise this test shows nothing.
        #expect(printed.split(separator: "|").first.map(String.init) == "\(offset)", "\(printed)")
        #expect(printed.split(separator: "|").dropFirst().map(String.init) == [
            "expires 0/miss", "expires 0/hit",
            "expires-no-date 1/miss", "expires-no-date 1/hit",
            "expired 2/miss", "expired 3/miss",
            "capitals 4/miss", "capitals 4/hit",
            "heuristic 5/miss", "heuristic 5/hit",
            "heuristic-capitals 6/miss", "heuristic-capitals 6/hit",
            "validators 7/miss", "validators 7/revalidated",
            "cookies 9/miss",
            "future,futureCapitals",
            // The date is read to the second: 119 or 120 as the clock ticks between.
        ] + [printed.hasSuffix("|119") ? "119" : "120"], "\(printed)")
    }
}
#endif
