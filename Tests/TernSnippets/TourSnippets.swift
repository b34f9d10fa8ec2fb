import Foundation
import Synchronization
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The README's snippets in the style it teaches (a service is a Sendable struct holding an
// APIClient), and the articles' that use it; `SnippetTests` checks they appear here line for
// line. Compiled, and where a test below says so, run.

extension APIConfiguration {
    static let production = APIConfiguration(name: "production", baseURL: "https://shop.example/api/v2")
    static let staging = APIConfiguration(name: "staging", baseURL: "https://staging.shop.example/api/v2",
                                          commonHeaders: ["X-Client": "tern-demo/1.0"], timeout: 20)
}

enum Tour {
    typealias Product = Readme.Product
    typealias Picture = Readme.Picture

    // MARK: Quick start

    struct Repository: Decodable, Sendable { let name: String }

    struct GitHub: Sendable {
        let client = APIClient(configuration: APIConfiguration(baseURL: "https://api.github.com"))

        func repositories(of user: String) -> Promise<[Repository]> {
            client.request(route: .get("/users/\(user)/repos"), parameters: URLParameters(["per_page": 50]))
        }
    }

    static func quickStart() async throws -> GitHub {
        let github = GitHub()
        let repositories = try await github.repositories(of: "apple").value
        print(repositories.count)
        return github
    }

    static func quickStartWithCallbacks(_ github: GitHub) -> Never {
        github.repositories(of: "apple")
            .onSuccess { repositories in print(repositories.count) }
            .onError { error in print(error) }
            .finally { exit(0) }
        dispatchMain()
    }

    // MARK: Defining a service

    struct ShopAPI: Sendable {
        let client: APIClient

        func products(page: Int) -> Promise<[Product]> {
            client.request(route: .get("/products"), parameters: URLParameters(["page": page, "tags": ["a", "b"]]))   // ?page=1&tags[]=a&tags[]=b
        }

        func add(_ product: Product) -> Promise<Product> {
            client.request(route: .post("/products"), parameters: JSONParameters(product))
        }

        func delete(_ id: Int) -> Promise<Void> { client.request(route: .delete("/products/\(id)")) }
    }

    static func definingAService() -> [ShopAPI] {
        let shop = ShopAPI(client: APIClient(configuration: .production))
        let local = ShopAPI(client: APIClient(configuration: APIConfiguration(baseURL: "http://127.0.0.1:8080")))
        return [shop, local]
    }

    // MARK: The tour

    static func progress(shop: ShopAPI, pictureURL: URL) {
        shop.upload(picture: pictureURL, for: 42)
            .onProgress(in: .main) { progress in print(progress.direction, progress.fractionCompleted ?? 0) }
    }

    static func streaming(shop: ShopAPI) async throws {
        for try await event in shop.client.stream(route: .get("/orders/live")).events {
            print(event.type, event.data)
        }
    }

    static func pages(shop: ShopAPI) async throws {
        for try await page in shop.client.pages(APIRequest<[Product]>(.get("/products")), style: .linkHeader) {
            print(page.elements.count)
        }
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
    static func authentication(shop: ShopAPI) async throws -> TokenStore {
        // TokenStore, Tokens and logIn are your code: the Authentication article's, to copy.
        let tokens = TokenStore(try await shop.logIn(user: "ada", password: "s3cret").value,
                                tokenURL: "https://shop.example/oauth/token")
        shop.client.delegate = tokens                                // held by the client
        return tokens
    }

    #if os(Linux)
    static func privateCA() throws -> ShopAPI {
        let privateCA = try CurlTransport(trusting: URL(fileURLWithPath: "/etc/shop/ca.pem"))   // that CA alone
        let internalShop = ShopAPI(client: APIClient(configuration: .production, transport: privateCA))
        return internalShop
    }

    static func pinning() throws -> APIClient {
        let pins = try CertificatePins(["shop.example": ["sha256/r8udi/Mxd6pLOS73t7GpHAvPdwWQiICjvcJqgsyjpsE=",
                                                         "sha256/YLh1dUR9y6Kja30RrAn7JKnbQG/uEtLMkBgFF2Fuihg="]])
        let pinned = APIClient(configuration: APIConfiguration(baseURL: "https://shop.example/api/v2", certificatePins: pins))
        return pinned
    }

    static func choosingATransport() throws -> [Any] {
        let overCurl = ShopAPI(client: APIClient(configuration: .production, transport: try CurlTransport()))
        let overURLSession = ShopAPI(client: APIClient(configuration: .production, transport: URLSessionTransport()))
        return [overCurl, overURLSession]
    }

    static func onTheTransportsThread(_ client: APIClient) async throws -> [Data] {
        let pages: [Data] = try await withTaskExecutorPreference(client.transport.taskExecutor) {
            var pages: [Data] = []
            for page in 1...3 { pages.append(try await client.request(route: .get("/export?page=\(page)")).value) }
            return pages
        }
        return pages
    }
    #endif

    static func stubbed() async throws -> [Product] {
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/api/v2/products", answers: .json(#"[{"id": 1, "name": "tern", "price": 3}]"#)))
        let stubbedShop = ShopAPI(client: APIClient(configuration: .production, transport: stubs))
        let stubbed = try await stubbedShop.products(page: 1).value   // one product, no network
        return stubbed
    }

    struct CannedTransport: WholeResponseTransport {
        func send(_ request: TransportRequest,
                  completion: @escaping @Sendable (Result<TransportResponse, any Error>) -> Void) -> any TransportTask {
            let head = ResponseHead(url: request.urlRequest.url!, statusCode: 200, httpVersion: nil, headers: [:])!
            completion(.success(TransportResponse(head: head, body: Data("[]".utf8))))
            return NoTask()
        }
    }

    static func transports() async throws -> [Product] {
        let offline = ShopAPI(client: APIClient(configuration: .production, transport: CannedTransport()))
        return try await offline.products(page: 1).value
    }

    // MARK: Testing with stubs

    /// The snippets' products, and how their request to the closed port ended. Awaited, not
    /// waited for: a test blocking a shared pool thread can starve the pipelines of tests
    /// running beside it.
    static func testing() async throws -> (products: [Product], unreachable: Result<[Product], any Error>) {
        let server = try LoopbackServer { request in
            request.path == "/products" ? .json(#"[{"id": 1, "name": "tern", "price": 3}]"#) : ServerResponse(status: 404)
        }
        defer { server.stop() }
        let testShop = ShopAPI(client: APIClient(configuration: APIConfiguration(baseURL: server.baseURL), responseQueue: .global()))

        let closed = try ClosedPort()
        let unreachableShop = ShopAPI(client: APIClient(configuration: APIConfiguration(baseURL: closed.baseURL)))   // fails: transportFailed
        let unreachable = unreachableShop.products(page: 1)

        let stubs = StubTransport()
        stubs.add(Stub(.get, "/products", query: ["page": "1"], answers: .json(#"[{"id": 1, "name": "tern", "price": 3}]"#)))
        stubs.add(Stub(.get, "/products", query: ["page": "2"], answers: .json("[]", headers: ["Link": "</products?page=3>; rel=\"next\"", "ETag": "\"v2\""])))
        stubs.add(Stub(.post, "/login", answers: .status(401), .json(#"{"token": "fresh"}"#)))
        stubs.add(Stub(.get, "/me", headers: ["Authorization": "Bearer fresh"], answers: .json(#"{"name": "ada"}"#)))
        stubs.add(Stub(.get, "/exports/**", answers: StubAnswer.text("zip").chunked(into: 1024).delayed(by: 2)))
        stubs.add(Stub(.get, "/offline", answers: .failure(URLError(.notConnectedToInternet))))
        stubs.add(Stub(.get, "/radar.png", answers: .status(200, headers: ["Content-Type": "image/png"], body: Data([0x89, 0x50, 0x4E, 0x47]))))
        let stubbedShop = ShopAPI(client: APIClient(configuration: APIConfiguration(baseURL: "https://shop.example"), transport: stubs))
        // Later: stubs.requests holds every request, bodies included (file and stream bodies read back).
        _ = stubbedShop

        let clock = TestClock()
        let delayed = Promise(value: 1).delay(30, clock: clock)
        clock.advance(by: 30)                  // the 30 s are over at once
        let clockedShop = ShopAPI(client: APIClient(configuration: APIConfiguration(baseURL: server.baseURL), clock: clock))
        _ = (delayed, clockedShop)

        let refused = await unreachable.result   // settled while the port is still reserved
        return (try await testShop.products(page: 1).value, refused)
    }
}

private typealias ShopAPI = Tour.ShopAPI
typealias Picture = Readme.Picture

extension ShopAPI {
    func upload(picture: URL, for id: Int) -> Promise<Picture> {
        let part = Part(name: "picture", fileURL: picture)   // streamed from disk, typed by its extension
        return client.request(route: .patch("/products/\(id)/picture"),
                              parameters: MultipartParameters(parts: [part, Part(name: "caption", value: "front")]))
    }

    func export(_ year: Int, to destination: URL) -> Promise<DownloadedFile> {
        client.download(route: .get("/exports/\(year).zip"), to: destination, replacing: true)
    }
}

extension ShopAPI {
    func order(_ product: Product, idempotencyKey: String) -> Promise<Product> {
        client.request(route: .post("/orders"), parameters: JSONParameters(product),
                       options: RequestOptions(headers: ["Idempotency-Key": idempotencyKey]))
    }
}

// MARK: Sample data (at file scope, as the article writes it)

extension ShopAPI {
    func featured() -> Promise<[Product]> {
        client.request(route: .get("/featured"),
                       options: RequestOptions(sampleData: .json(#"[{"id": 1, "name": "Arctic tern", "price": 12}]"#)))
    }
}

extension Tour {
    static func sampleData(fixtureURL: URL) async throws -> [Product] {
        let preview = ShopAPI(client: APIClient(configuration: APIConfiguration(baseURL: "https://shop.example", usesSampleData: true)))
        let sampled: APIRequest<[Product]> = APIRequest(.get("/products")).sample(.file(fixtureURL))   // read when used
        _ = sampled
        return try await preview.featured().value
    }
}

extension ShopAPI {
    func update(_ product: Product) -> Promise<Product> {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase   // a member `unitPrice` goes out as "unit_price"
        return client.request(route: .put("/products/\(product.id)"), parameters: JSONParameters(product, encoder: encoder))
    }
}

// MARK: Authentication (at file scope, as the article writes it)

struct Tokens: Decodable, Sendable {
    let access: String, refresh: String
    enum CodingKeys: String, CodingKey { case access = "access_token", refresh = "refresh_token" }   // OAuth's names
}

@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)   // Mutex; before those, see TokenBox below
final class TokenStore: APIDelegate {
    private let tokens: Mutex<Tokens>
    private let tokenURL: String
    init(_ tokens: Tokens, tokenURL: String) { self.tokens = Mutex(tokens); self.tokenURL = tokenURL }

    var current: Tokens { tokens.withLock { $0 } }

    func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
        request.setValue("Bearer \(current.access)", forHTTPHeaderField: "Authorization")
    }

    func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
        Promise { [self] in
            let refreshed: Tokens = try await api.request(
                route: .post(tokenURL),
                parameters: FormParameters(["grant_type": "refresh_token", "refresh_token": current.refresh]),
                options: RequestOptions(authenticates: false)).value      // not signed, not held for itself
            tokens.withLock { $0 = refreshed }
        }
    }
}

extension ShopAPI {
    func logIn(user: String, password: String) -> Promise<Tokens> {
        client.request(route: .post("/login"), parameters: FormParameters(["user": user, "password": password]),
                       options: RequestOptions(authenticates: false))   // a 401 here is a wrong password
    }
}

@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)   // Mutex
final class ServiceToken: APIDelegate {
    struct Grant: Decodable, Sendable {
        let accessToken: String
        enum CodingKeys: String, CodingKey { case accessToken = "access_token" }
    }
    private let token = Mutex<String?>(nil)
    private let tokenURL: String, clientID: String, secret: String
    init(tokenURL: String, clientID: String, secret: String) { (self.tokenURL, self.clientID, self.secret) = (tokenURL, clientID, secret) }

    func api(_ api: AbstractAPI, needsRefreshBeforeSending request: URLRequest) -> Bool {
        token.withLock { $0 == nil }                                  // no token yet: get one first
    }

    func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
        if let token = token.withLock({ $0 }) { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
    }

    func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
        Promise { [self] in
            let grant: Grant = try await api.request(
                route: .post(tokenURL),
                parameters: FormParameters(["grant_type": "client_credentials", "client_id": clientID, "client_secret": secret]),
                options: RequestOptions(authenticates: false)).value
            token.withLock { $0 = grant.accessToken }
        }
    }
}

final class TokenBox: @unchecked Sendable {   // `tokens` is touched under `lock` alone
    private let lock = NSLock()
    private var tokens: Tokens
    init(_ tokens: Tokens) { self.tokens = tokens }

    func withLock<Result>(_ body: (inout Tokens) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&tokens)
    }
}
