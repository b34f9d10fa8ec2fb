import Foundation
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The examples in the documentation comments of `Tern`'s symbols, compiled (see SymbolSnippets.swift).

extension SymbolSnippets {
    typealias ShopAPI = Readme.ShopAPI

    // MARK: Defining an API

    enum ClientStruct {
        struct Shop: Sendable {
            let client: APIClient

            func products(page: Int) -> Promise<[Product]> {
                client.request(route: .get("/products"), parameters: URLParameters(["page": page]))
            }
        }

        static func make() -> Shop {
            let shop = Shop(client: APIClient(configuration: APIConfiguration(baseURL: "https://shop.example/api/v2")))
            return shop
        }
    }

    enum Subclass {
        final class ShopAPI: AbstractAPI, @unchecked Sendable {   // only `let`s of Sendable types
            func products(page: Int) -> Promise<[Product]> {
                request(route: .get("/products"), parameters: URLParameters(["page": page]))
            }
            func delete(_ id: Int) -> Promise<Void> { request(route: .delete("/products/\(id)")) }
        }

        static func make() -> ShopAPI {
            let api = ShopAPI(configuration: APIConfiguration(baseURL: "https://shop.example/api/v2"))
            return api
        }
    }

    enum Requests {
        enum Shop {
            static func products(page: Int) -> APIRequest<[Product]> {
                APIRequest(.get("/products"), parameters: URLParameters(["page": page]))
            }
            static func delete(_ id: Int) -> APIRequest<Void> { APIRequest(.delete("/products/\(id)")) }
        }

        static func send(api: ShopAPI) async throws -> [Product] {
            let products = try await api.send(Shop.products(page: 2)).value
            return products
        }
    }

    static func send(api: ShopAPI) async throws -> [Product] {
        let products = try await api.send(APIRequest<[Product]>(.get("/products"))).value
        return products
    }

    static func routes(client: APIClient) {
        let created: Promise<Product> = client.request(route: .post("/products"))        // joined to APIConfiguration.baseURL
        let health: Promise<Response> = client.request(route: .get("https://status.example.com/health"))  // used as it is
        let purged: Promise<Void> = client.request(route: Route(method: "PURGE", url: "/cache"))
        _ = (created, health, purged)
    }

    struct Featured: Sendable {
        let client: APIClient

        func featured() -> Promise<[Product]> {
            client.request(route: .get("/featured"),
                           options: RequestOptions(sampleData: .json(#"[{"id": 1, "name": "Arctic tern", "price": 12}]"#)))
        }
        static let catalog = APIRequest<[Product]>(.get("/products")).sample(.json("[]"))

        func download(_ id: Int) -> Promise<Response> { client.request(route: .get("/files/\(id)")) }
    }

    // MARK: Parameters

    struct CSVParameters: RequestParameters {
        let rows: [[String]]
        var headers: HTTPHeaders = [:]
        func encode(into draft: inout RequestDraft) throws {
            draft.body = .data(Data(rows.map { $0.joined(separator: ",") }.joined(separator: "\r\n").utf8))
            draft.headers["Content-Type"] = "text/csv"
        }
    }

    static func parameters(pngData: Data, archive: URL, size: Int64, recording: URL, pictureURL: URL,
                           product: Product, snakeCaseEncoder: JSONEncoder) {
        _ =
        BodyParameters(pngData, contentType: "image/png")
        _ =
        BodyParameters(archive, contentType: "application/zip")   // memory stays flat whatever its size
        _ =
        BodyParameters(length: size, contentType: "audio/ogg") { InputStream(url: recording)! }
        _ =
        FormParameters(["user": "ada", "password": "•••"])
        _ =
        JSONParameters(product)
        _ =
        JSONParameters(product, encoder: snakeCaseEncoder, headers: ["X-Trace": "1"])
        _ =
        MultipartParameters(parts: [
            Part(name: "picture", fileURL: pictureURL),   // typed by its extension
            Part(name: "caption", value: "front"),
        ])
        _ =
        Part(name: "caption", value: "front")
        _ =
        Part(name: "thumbnail", data: pngData, filename: "thumb.png", mimeType: "image/png")
        _ =
        Part(name: "picture", fileURL: pictureURL)            // streamed from disk, type from ".png"
        _ =
        URLParameters(["page": 2, "tags": ["a", "b"], "filter": ["color": "red"]])
        // ?filter%5Bcolor%5D=red&page=2&tags%5B%5D=a&tags%5B%5D=b

        struct Search: Encodable { let term: String; let limit: Int }
        _ =
        URLParameters(Search(term: "tern", limit: 10))
    }

    // MARK: Policies and options

    struct Versioned: RequestAdapter {
        func adapt(_ request: inout URLRequest) throws {
            request.setValue("2024-06-01", forHTTPHeaderField: "API-Version")
        }
    }

    static func policies(client: APIClient) {
        _ =
        APIConfiguration(adapters: [Versioned()])
        _ =
        APIConfiguration(redirectPolicy: RedirectPolicy(maximumRedirects: 3, sensitiveHeaders: ["X-Api-Key"]))
        _ =
        RequestOptions(redirectPolicy: .never)   // the 3xx is the response
        _ =
        RedirectPolicy { redirect in redirect.isCrossOrigin ? .doNotFollow : .follow }
        _ =
        APIConfiguration(retryPolicy: RetryPolicy(maxRetries: 4, baseDelay: 0.2))
        _ =
        RequestOptions(retryPolicy: .never)
        _ =
        RequestOptions(validation: .statusCodes(200..<400))
        _ =
        RequestOptions(validation: .custom { $0.statusCode == 200 && $0.headers["X-Ok"] == "1" })
        let report: Promise<Data> = client.request(route: .get("/report"), options: RequestOptions(timeout: 2.5, responseQueue: .global()))
        let latest = RequestOptions(cacheDirectives: CacheDirectives(noCache: true))        // ask the server
        let offline = RequestOptions(cacheDirectives: CacheDirectives(onlyIfCached: true))  // a 504 if nothing is kept
        let lenient = RequestOptions(cacheDirectives: CacheDirectives(maxStale: 3600))      // up to an hour stale will do
        _ = (report, [latest, offline, lenient])
    }

    static func pins() throws -> APIClient {
        let pins = try CertificatePins([
            "api.shop.example": ["sha256/r8udi/Mxd6pLOS73t7GpHAvPdwWQiICjvcJqgsyjpsE=",
                                 "sha256/YLh1dUR9y6Kja30RrAn7JKnbQG/uEtLMkBgFF2Fuihg="],
        ])
        let shop = APIClient(configuration: APIConfiguration(baseURL: "https://api.shop.example", certificatePins: pins))
        return shop
    }

    static func cookies() -> APIClient {
        let jar = CookieJar()
        let client = APIClient(configuration: APIConfiguration(baseURL: "https://shop.example", cookies: .shared(jar)))
        print(jar.all)
        return client
    }

    // MARK: Parsing

    struct Envelope<Value: Decodable>: Decodable { let page: Int; let results: Value }

    final class PageParser: JSONParser, @unchecked Sendable {
        override func parse<Value: Decodable>(_ type: Value.Type, from response: Response) throws -> Value {
            try super.parse(Envelope<Value>.self, from: response).results   // {"page": 1, "results": [...]}
        }
    }

    static func parsers() -> APIClient {
        let client = APIClient(responseParser: JSONParser(), configuration: .production)

        // Values inside an envelope: {"data": {"items": [...]}}
        _ =
        JSONParser(keyPath: "data.items")

        // Error bodies decoded as the server's own error type, like TRON's errorModel:
        _ =
        JSONParser(errorType: ShopError.self)
        return client
    }

    static func responses(client: APIClient) async throws {
        let response: Response = try await client.request(route: .get("/products")).value
        if let wire = response.metrics.last {
            print(wire.firstByte ?? 0, wire.reusedConnection ?? false, wire.httpVersion ?? "")
        }
    }

    static func links(client: APIClient) async throws {
        let response: Response = try await client.request(route: .get("/repos")).value
        if let next = response.link(rel: "next") { print(next) }
    }
}
