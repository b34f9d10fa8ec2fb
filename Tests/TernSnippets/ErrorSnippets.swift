import Foundation
import Tern

// The Responses and Errors article's error type of an app's own, compiled (SnippetTests finds
// the block here).
private typealias ShopAPI = Tour.ShopAPI
private typealias ShopError = Readme.ShopError

enum ShopFailure: Error {
    case notFound
    case rejected(String)
    case unavailable(any Error)
}

extension ShopAPI {
    func product(_ id: Int) -> Promise<Product> {
        client.request(route: .get("/products/\(id)")).recover { error -> Product in
            switch error as? APIError {
            case .unacceptableStatus(let failure)? where failure.statusCode == 404:
                throw ShopFailure.notFound
            case .unacceptableStatus(let failure)?:
                throw ShopFailure.rejected(failure.serverError(as: ShopError.self)?.message ?? "\(failure)")
            default:
                throw ShopFailure.unavailable(error)
            }
        }
    }
}
