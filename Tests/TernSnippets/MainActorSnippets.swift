import Foundation
import Tern

// The Promises article's model on the main actor, compiled (SnippetTests finds it here) and run
// by MainActorSnippetTests: awaited, and from a callback on the main queue.
enum MainActorSnippets {
    typealias ShopAPI = Tour.ShopAPI

    @MainActor final class ProductList {
        var products: [Product] = []
        var failure: (any Error)?

        func load(from shop: ShopAPI) async {
            do { products = try await shop.products(page: 1).value } catch { failure = error }
        }

        func reload(from shop: ShopAPI) {
            shop.products(page: 1).onSuccess(in: .main) { products in
                MainActor.assumeIsolated { self.products = products }
            }
        }
    }
}
