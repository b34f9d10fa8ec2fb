#if os(Linux)
import Foundation
import Testing
@testable import Tern
import TernTesting

/// Cursors read from a JSON body (`.cursor(from: .body("next"))`), which the documentation says
/// may be "a string or number", `null`, an empty string or no such key meaning no next page.
/// A number that happens to be `0` or `1` (a 0-based page index, an offset after one element)
/// is a cursor like any other. `JSONSerialization` on Linux hands numbers back as `NSNumber`,
/// and `NSNumber` 0 and 1 pass `is Bool`: the cursor was taken for a boolean, and so for none,
/// and the pagination ended after the first page, silently, as if the server had no more.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct NumericCursorAttackTests {
    static func page(_ body: String) -> String {
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    /// Pages linked by numeric cursors `first` → `second` → none: all three pages are read,
    /// each cursor sent as the number's digits.
    @Test(arguments: [(1, 2), (0, 1), (2, 3)]) func aNumericCursorOfZeroOrOneIsACursor(first: Int, second: Int) async throws {
        let server = try KeepingServer { request, _ in
            let target = KeepingServer.target(of: request)
            if target == "/items" { return Self.page(#"{"items": [1], "next": \#(first)}"#) }
            if target == "/items?after=\(first)" { return Self.page(#"{"items": [2], "next": \#(second)}"#) }
            return Self.page(#"{"items": [3], "next": null}"#)
        }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        var pages: [[Int]] = []
        let sequence = api.pages(APIRequest<[Int]>(.get(server.baseURL + "/items")), style: .cursor(parameter: "after", from: .body("next")),
                                 collectionKeyPath: "items")
        for try await page in sequence { pages.append(page.elements) }
        #expect(pages == [[1], [2], [3]], "next: \(first), then \(second): read \(pages), asked \(server.targets)")
        #expect(server.targets == ["/items", "/items?after=\(first)", "/items?after=\(second)"], "\(server.targets)")
    }
}
#endif
