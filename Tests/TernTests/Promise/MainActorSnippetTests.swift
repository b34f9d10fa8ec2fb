import Foundation
import Testing
import Tern
import TernTesting
@testable import TernSnippets

/// The Promises article's model on the main actor, run on stubs: the awaited load, its failure,
/// and the callback that reaches the main actor's state from the main queue (where
/// `MainActor.assumeIsolated` would stop the program if the callback ran anywhere else).
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct MainActorSnippetTests {
    let stubs = StubTransport()
    var shop: Tour.ShopAPI { Tour.ShopAPI(client: APIClient(configuration: .production, transport: stubs)) }

    @Test func theModelAwaitsItsProducts() async {
        stubs.add(Stub(.get, "/api/v2/products", answers: .json(#"[{"id": 1, "name": "tern", "price": 3}]"#), .status(503)))
        let list = MainActorSnippets.ProductList()
        await list.load(from: shop)
        #expect(await list.products.map(\.name) == ["tern"])
        #expect(await list.failure == nil)
        await list.load(from: shop)
        #expect(await (list.failure as? APIError)?.caseName == "unacceptableStatus")
    }

    @Test func theCallbackSetsTheModelOnTheMainActor() async {
        stubs.add(Stub(.get, "/api/v2/products", answers: .json(#"[{"id": 2, "name": "gull", "price": 4}]"#)))
        let list = MainActorSnippets.ProductList()
        await list.reload(from: shop)
        for _ in 0..<3000 where await list.products.isEmpty {   // 30 s at most
            try? await Task.sleep(for: .milliseconds(10))
        }
        #expect(await list.products.map(\.name) == ["gull"])
    }
}
