import Foundation
import Testing
import Tern
import TernCore
import TernTesting

/// `pages(_:style:collectionKeyPath:)` hands each page to the loop and should keep none of it:
/// a server that answers page after page (a feed, an export) must not make the sequence's
/// memory grow with pages the caller has already consumed and let go.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct PaginationMemoryBreakTests {
    typealias Tracked = PaginationSeamAttackTests.Tracked

    /// 300 pages of 4 elements each, numbered, each element counting itself alive while
    /// something holds it. The loop drops each page as it reads the next: at the last page,
    /// only that page's elements should be alive, not the 1,200 read before it.
    @Test func consumedPagesAreNotKept() async throws {
        let tag = UUID().uuidString
        let server = try PaginationSeamAttackTests.Hostile { request, _ in
            let page = URLComponents(string: PaginationSeamAttackTests.target(of: request))?.queryItems?.first { $0.name == "page" }?.value ?? "1"
            let number = Int(page) ?? 1
            let body = number > 300 ? "[]" : "[" + (0..<4).map { #"{"tag": "\#(tag)", "n": \#(number * 4 + $0)}"# }.joined(separator: ",") + "]"
            return PaginationSeamAttackTests.page(body)
        }
        var pages = 0
        var mostAlive = 0
        var iterator = PaginationSeamAttackTests.api().pages(APIRequest<[Tracked]>(.get(server.baseURL + "/feed"))).makeAsyncIterator()
        while let page = try await iterator.next() {
            pages += 1
            #expect(page.elements.count == 4)
            mostAlive = max(mostAlive, Tracked.count(tag))
        }
        #expect(pages == 300)
        // The page in hand, and at most the one before it: never all of them.
        #expect(mostAlive <= 8, "\(mostAlive) elements alive after \(pages) pages")
        #expect(Tracked.count(tag) <= 8, "\(Tracked.count(tag)) elements alive after the loop, its iterator still held")
        _ = iterator
    }
}
