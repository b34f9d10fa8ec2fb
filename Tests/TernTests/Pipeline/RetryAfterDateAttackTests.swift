import Foundation
import Testing
@testable import Tern
import TernTesting

/// A `Retry-After` date in each form RFC 9110 (§5.6.7) says a recipient must read: the
/// IMF-fixdate, and the obsolete RFC 850 and asctime forms that old servers and proxies still
/// send. A date the policy does not read is no date at all: the request was retried after its
/// own short backoff, before the time the server asked for.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RetryAfterDateAttackTests {
    /// Each form, an hour ahead: read as about an hour.
    @Test(arguments: ["imf", "rfc850", "asctime"])
    func aDateInEveryFormIsRead(_ form: String) {
        let now = Date(timeIntervalSince1970: 1_780_000_000)
        let seconds = RetryPolicy.retryAfter(Self.date(now.addingTimeInterval(3_600), as: form), now: now)
        #expect(seconds.map { (3_599...3_601).contains($0) } == true, "\(String(describing: seconds))")
    }

    /// An hour ahead, past the policy's cap: on the wire, the request is sent once and fails
    /// with the server's answer, never retried sooner than the server allows.
    @Test(arguments: ["imf", "rfc850", "asctime"])
    func aDateInEveryFormPastTheCapIsNotRetriedSooner(_ form: String) async throws {
        let server = try RetryTests.FlakyServer()
        let retryAfter = Self.date(Date().addingTimeInterval(3_600), as: form)
        server.script("/a", [(503, ["Retry-After": retryAfter]), (503, ["Retry-After": retryAfter]), (503, ["Retry-After": retryAfter])])
        let api = try TestAPI(baseURL: server.server.baseURL,
                              configuration: APIConfiguration(timeout: 30, retryPolicy: RetryPolicy(maxRetries: 2, baseDelay: 0.01, jitter: false),
                                                              retryBudget: .unlimited))
        let result = await (api.request(route: api.get(endpoint: "/a")) as Promise<Data>).result
        guard case .failure(APIError.unacceptableStatus(let failure)) = result else {
            Issue.record("expected the 503, got \(result)")
            return
        }
        #expect(failure.statusCode == 503)
        #expect(server.hits("/a") == 1, "Retry-After: \(retryAfter)")
    }

    /// `date` in `form`, in GMT, as a server writes it.
    static func date(_ date: Date, as form: String) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0)!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        let weekday = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"][c.weekday! - 1]
        let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][c.month! - 1]
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let time = "\(two(c.hour!)):\(two(c.minute!)):\(two(c.second!))"
        return switch form {
        case "rfc850": "\(weekday), \(two(c.day!))-\(month)-\(two(c.year! % 100)) \(time) GMT"
        case "asctime": "\(weekday.prefix(3)) \(month) \(c.day! < 10 ? " \(c.day!)" : "\(c.day!)") \(time) \(c.year!)"
        default: "\(weekday.prefix(3)), \(two(c.day!)) \(month) \(c.year!) \(time) GMT"
        }
    }
}
