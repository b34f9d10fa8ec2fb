import Foundation
import Tern
import TernTesting

// The Caching Responses article's code and the README's line, compiled (SnippetTests finds
// each block here), and run against stubs by CachingSnippetTests.
enum CachingSnippets {
    typealias ShopAPI = Tour.ShopAPI

    static func overview(cachesDirectory: URL) async throws -> [HTTPCache] {
        let memory = HTTPCache()                                              // in memory; 20 MiB by default, on disk too
        let disk = try HTTPCache(directory: cachesDirectory.appendingPathComponent("shop"))   // survives relaunches
        let cachedShop = ShopAPI(client: APIClient(configuration: APIConfiguration(baseURL: "https://shop.example/api/v2", cache: disk)))
        _ = cachedShop
        return [memory, disk]
    }

    static func outcome(_ cachedShop: ShopAPI) async throws -> Response {
        let response: Response = try await cachedShop.client.request(route: .get("/products")).value
        print(response.cacheOutcome ?? .miss, response.headers["Age"] ?? "0")
        return response
    }

    static func directives(_ cachedShop: ShopAPI) async throws -> [Product] {
        let latest = RequestOptions(cacheDirectives: CacheDirectives(noCache: true))         // ask the server
        let offline = RequestOptions(cacheDirectives: CacheDirectives(onlyIfCached: true))   // a 504 if nothing kept will do
        let lenient = RequestOptions(cacheDirectives: CacheDirectives(maxStale: 3600))       // an hour stale will do
        let products: [Product] = try await cachedShop.client.request(route: .get("/products"), options: offline).value
        _ = (latest, lenient)
        return products
    }

    static func testing() -> HTTPCache {
        let clock = TestClock()
        let testCache = HTTPCache(clock: clock)
        clock.advance(by: 61)   // a max-age=60 response is stale now
        return testCache
    }

    static func readme() -> APIConfiguration {
        let cached = APIConfiguration(baseURL: "https://shop.example/api/v2", cache: HTTPCache())   // 20 MiB in memory
        return cached
    }
}
