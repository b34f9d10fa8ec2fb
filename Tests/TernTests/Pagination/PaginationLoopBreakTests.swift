import Foundation
import Testing
import Tern
import TernTesting

/// Pagination.md: "a server that loops cannot make the sequence loop". A server that answers
/// its numbered pages with two bodies in turn (odd pages one, even pages the other), with no
/// state and no cursor to repeat, loops: each page differs from the one before, so none of the
/// documented ends (an empty page, a cursor or URL already followed, a page identical to the
/// one before) ever comes, and the sequence yields the same two pages for ever.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct PaginationLoopBreakTests {
    @Test func aServerAlternatingTwoPagesDoesNotLoopTheSequence() async throws {
        let server = try PaginationSeamAttackTests.Hostile { request, _ in
            let page = URLComponents(string: PaginationSeamAttackTests.target(of: request))?.queryItems?.first { $0.name == "page" }?.value
            return PaginationSeamAttackTests.page((Int(page ?? "1") ?? 1) % 2 == 1 ? "[1, 2]" : "[3, 4]")
        }
        var pages: [[Int]] = []
        for try await page in PaginationSeamAttackTests.api().pages(APIRequest<[Int]>(.get(server.baseURL + "/alternating"))) {
            pages.append(page.elements)
            if pages.count == 50 { break }
        }
        // The two pages once each, and at most the first again: its repeat is what shows the loop.
        #expect(pages.count <= 3, "\(pages.count) pages: \(pages.prefix(6))…")
    }
}
