import Foundation
import Testing
import Tern
import TernTesting
@testable import TernSnippets

/// The article's code, run on stubs: kept, answered from the cache, and offline.
@Suite(.onTestThreads) struct CachingSnippetTests {
    @Test func theArticlesCodeRuns() async throws {
        let stubs = StubTransport()
        let body = Data(#"[{"id": 1, "name": "tern", "price": 3}]"#.utf8)
        stubs.add(Stub(.get, "/api/v2/products", answers: .status(200, headers: ["Content-Type": "application/json", "Cache-Control": "max-age=60"], body: body)))
        let configuration = APIConfiguration(baseURL: "https://shop.example/api/v2", cache: HTTPCache())
        let shop = CachingSnippets.ShopAPI(client: APIClient(configuration: configuration, transport: stubs, responseQueue: .global()))
        #expect(try await CachingSnippets.outcome(shop).cacheOutcome == .miss)
        #expect(try await CachingSnippets.outcome(shop).cacheOutcome == .hit)
        #expect(try await CachingSnippets.directives(shop).count == 1)
        #expect(stubs.requests.count == 1)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-snippet-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try await CachingSnippets.overview(cachesDirectory: directory).count == 2)
        #expect(CachingSnippets.readme().cache != nil)
        #expect(CachingSnippets.testing().byteCount == 0)
    }
}
