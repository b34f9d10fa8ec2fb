import Foundation
import Testing
import Tern
import TernTesting

// Every snippet of README.md and the DocC articles, compiled as part of the test target, so that
// they cannot drift from the API. Declarations stand as they are in the documents; statements
// sit in functions. `SnippetTests` checks that each snippet appears here line for line.
enum Readme {
    // MARK: Quick start

    struct Repository: Decodable, Sendable { let name: String }

    final class GitHubAPI: AbstractAPI, BaseAPI, @unchecked Sendable {
        let baseURL = "https://api.github.com"

        func repositories(of user: String) -> Promise<[Repository]> {
            request(route: get(endpoint: "/users/\(user)/repos"),
                    parameters: URLParameters(["per_page": 50, "sort": "updated"]))
        }
    }

    static func quickStart() async throws {
        let api = GitHubAPI(responseParser: JSONParser())
        let repositories = try await api.repositories(of: "apple").value
        print(repositories.count)
    }

    static func quickStartWithCallbacks(_ api: GitHubAPI) -> Never {
        api.repositories(of: "apple")
            .onSuccess { repositories in print(repositories.count) }
            .onError { error in print(error) }
            .finally { exit(0) }
        dispatchMain()
    }

    // MARK: Defining an API

    struct Product: Codable, Sendable { let id: Int; let name: String; let price: Int }
    struct Session: Codable, Sendable { let token: String }
    struct Picture: Codable, Sendable { let bytes: Int }
    struct ShopError: Codable, Error, Sendable { let code: Int; let message: String }

    final class ShopAPI: AbstractAPI, BaseAPI, @unchecked Sendable {
        let baseURL = "https://shop.example/api/v2"

        func products(page: Int) -> Promise<[Product]> {
            request(route: get(endpoint: "/products"), parameters: URLParameters(["page": page, "tags": ["a", "b"]]))
        }

        func add(_ product: Product) -> Promise<Product> {
            request(route: post(endpoint: "/products"), parameters: JSONParameters(product, headers: ["X-Trace": "1"]))
        }

        func login(user: String, password: String) -> Promise<Session> {
            request(route: post(endpoint: "/login"), parameters: FormParameters(["user": user, "password": password]))
        }

        func upload(picture: URL, for id: Int) -> Promise<Picture> {
            let part = Part(name: "picture", fileURL: picture, mimeType: .png)   // streamed from disk
            return request(route: patch(endpoint: "/products/\(id)/picture"),
                           parameters: MultipartParameters(parts: [part, Part(name: "caption", value: "front")]))
        }

        func delete(_ id: Int) -> Promise<Void> { request(route: delete(endpoint: "/products/\(id)")) }
    }

    static func definingAnAPI() -> [Any] {
        let shop = ShopAPI(responseParser: JSONParser())
        let staging = APIConfiguration(name: "staging", commonHeaders: ["X-Client": "tern-demo/1.0"],
                                       timeout: 20, cachePolicy: .reloadIgnoringLocalCacheData)
        let stagingShop = ShopAPI(configuration: staging)
        return [shop, stagingShop, signing(shop)]
    }

    final class Signer: APIDelegate {
        let token: String
        init(token: String) { self.token = token }
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        }
    }

    static func signing(_ shop: ShopAPI) -> Signer {
        let signer = Signer(token: "t-42")
        shop.delegate = signer
        return signer
    }
}

extension Readme {
    // MARK: Request values

    enum Shop {
        static let catalog: APIRequest<[Product]> = .get("/products")
        static func product(_ id: Int) -> APIRequest<Product> { .get("/products/\(id)") }
        static func remove(_ id: Int) -> APIRequest<Void> { .delete("/products/\(id)") }
        static let status: APIRequest<Response> = .get("/status")
        static let search: APIRequest<[Product]> = .post("/search", parameters: JSONParameters(["term": "boots"]),
                                                         options: RequestOptions(timeout: 5))
    }

    static func requestValues(shop: ShopAPI) async throws {
        let product = try await shop.send(Shop.product(7)).value
        try await shop.send(Shop.remove(7)).value
        _ = product
    }

    // MARK: Pagination

    static func pagination(shop: ShopAPI) async throws {
        let catalog = Paginator<Product>(api: shop, request: Shop.catalog, style: .pageNumber())
        catalog.query = "boots"                 // sent as ?q=boots; starts over, cancelling a load in flight
        catalog.filters = ["color": "red"]      // the same
        let firstPage = try await catalog.loadNextPage().value
        if catalog.hasNextPage {
            _ = try await catalog.loadNextPage().value
        }
        print(firstPage.number ?? 0, catalog.elements.count, catalog.isLoading, catalog.lastError as Any)
        _ = catalog.refresh()                   // the first page again, replacing the elements
    }

    static func pageStyles(shop: ShopAPI) -> [Any] {
        let numbered = PageStyle.pageNumber(parameter: "page", first: 1)              // ?page=1, 2, … until an empty page
        let cursors = PageStyle.cursor(parameter: "after", from: .body("meta.next"))  // or .header("X-Next-Cursor")
        let links = PageStyle.linkHeader                                              // Link: <…?page=2>; rel="next"
        let wrapped = Paginator<Product>(api: shop, request: Shop.catalog, style: cursors, collectionKeyPath: "data.items")
        return [numbered, links, wrapped]
    }

    static func pageSequence(shop: ShopAPI) async throws {
        for try await page in shop.pages(Shop.catalog, style: .linkHeader) {
            print(page.number ?? 0, page.elements.count)
        }
    }
}

// MARK: Sample data (at file scope, as the README writes it)

private typealias ShopAPI = Readme.ShopAPI

extension ShopAPI {
    func featured() -> Promise<[Product]> {
        request(route: get(endpoint: "/featured"),
                options: RequestOptions(sampleData: .json(#"[{"id": 1, "name": "Arctic tern", "price": 12}]"#)))
    }
}

extension Readme {
    static func sampleData(fixtureURL: URL) async throws -> [TernTests.Product] {
        let preview = ShopAPI(configuration: APIConfiguration(usesSampleData: true))
        let sampled: APIRequest<[Product]> = .get("/products").sample(.file(fixtureURL))   // read when used
        _ = sampled
        return try await preview.featured().value
    }
}

// MARK: Uploads and downloads (an extension, so that the README's ShopAPI stays as shown)

extension Readme.ShopAPI {
    func restore(_ archive: URL) -> Promise<Void> {   // streamed from disk as it is sent
        request(route: put(endpoint: "/backups/latest"), parameters: FileParameters(archive, contentType: "application/zip"))
    }

    func publish(_ recording: URL, length: Int64) -> Promise<Void> {   // a new stream for each attempt
        request(route: post(endpoint: "/recordings"),
                parameters: StreamParameters(length: length, contentType: "audio/ogg") { InputStream(url: recording)! })
    }

    func export(_ year: Int, to destination: URL) -> Promise<DownloadedFile> {
        download(route: get(endpoint: "/exports/\(year).zip"), to: destination, replacing: true)
    }
}

extension Readme {
    // MARK: Parameters

    static func noBrackets() -> URLParameters {
        let query = URLParameters(["tags": ["a", "b"], "on": true], encoding: QueryEncoding(arrays: .noBrackets, bools: .literal))
        // ?on=true&tags=a&tags=b
        return query
    }

    struct PlainText: RequestParameters {
        let text: String
        var headers: HTTPHeaders = [:]
        func encode(into draft: inout RequestDraft) throws {
            draft.body = .data(Data(text.utf8))
            draft.headers["Content-Type"] = "text/plain; charset=utf-8"
        }
    }

    // MARK: Responses

    final class FilesAPI: AbstractAPI, BaseAPI, @unchecked Sendable {
        let baseURL = "https://files.example"
        func file(_ id: Int) -> Promise<Product> { request(route: get(endpoint: "/files/\(id)")) }      // decoded
        func raw(_ id: Int) -> Promise<Data> { request(route: get(endpoint: "/files/\(id)/raw")) }     // the body
        func readme() -> Promise<String> { request(route: get(endpoint: "/README")) }                  // text, by charset
        func whole(_ id: Int) -> Promise<Response> { request(route: get(endpoint: "/files/\(id)")) }   // everything
        func exists(_ id: Int) -> Promise<Void> { request(route: head(endpoint: "/files/\(id)")) }     // nothing
        func maybe(_ id: Int) -> Promise<Product?> { request(route: get(endpoint: "/maybe/\(id)")) }   // nil when empty
    }

    static func linkHeaders(shop: ShopAPI) async throws -> URL? {
        let firstPage: Response = try await shop.request(route: shop.get(endpoint: "/products")).value
        let nextPage = firstPage.link(rel: "next")   // nil on the last page
        return nextPage
    }

    static func keyPathParser() -> JSONParser {
        let parser = JSONParser(decoder: JSONDecoder(), keyPath: "data.items", errorType: ShopError.self)
        return parser
    }

    final class PageParser: JSONParser, @unchecked Sendable {
        struct Page<T: Decodable>: Decodable { let page: Int; let results: T }
        override func getInstance<T: Decodable>(from data: Data, response: HTTPURLResponse) throws -> T {
            try decode(Page<T>.self, from: data).results      // {"page": 1, "results": [...]}
        }
    }

    // MARK: Errors, cancellation, queues

    static func errorsAndCancellation(shop: ShopAPI) async throws {
        shop.products(page: 1).onError { error in
            switch error as? APIError {
            case .cancelled?:
                break
            case .unacceptableStatus(let failure)? where failure.statusCode == 404:
                print("no products")
            case .unacceptableStatus(let failure)?:
                print(failure.serverError(as: ShopError.self)?.message ?? "\(failure)")
            default:
                print(error)   // "Could not parse Array<Product> at [1].price from GET https://… (status 200): …"
            }
        }

        let pending = shop.products(page: 1)
        pending.cancel()                            // cancels the URLSession task; settles as .cancelled

        let task = Task { try await shop.products(page: 1).value }
        task.cancel()                               // the same, from Swift concurrency

        let report: Promise<Data> = shop.request(route: shop.get(endpoint: "/report"), options: RequestOptions(timeout: 2.5))
        _ = report

        let serverShop = ShopAPI(responseParser: JSONParser(), responseQueue: .global())
        let products = try await serverShop.products(page: 1).value
        _ = products
    }

    // MARK: Promises

    struct User: Sendable {}
    final class UsersAPI: AbstractAPI, BaseAPI, @unchecked Sendable {
        let baseURL = "https://users.example"
        func requestUser() -> Promise<User> { Promise(value: User()) }
        func favorites(of user: User) -> Promise<[String]> { Promise(value: ["tern"]) }
    }

    static func promises(usersAPI: UsersAPI, backgroundQueue: DispatchQueue) {
        usersAPI.requestUser()
            .then(in: backgroundQueue, usersAPI.favorites(of:))   // then = flatMap onto another promise
            .onSuccess(in: .main) { favorites in print(favorites) }
            .onError(in: backgroundQueue) { error in print(error) }
            .finally(in: .main) { print("done") }
    }

    // MARK: Uploads and downloads

    static func resume(shop: ShopAPI) async throws {
        let destination = URL(fileURLWithPath: "/tmp/2026.zip")
        do {
            let file = try await shop.export(2026, to: destination).value
            print(file.fileURL.path, file.response.statusCode)
        } catch let error as APIError {
            // Cut off, cancelled or timed out: the bytes that arrived are kept when they can be resumed.
            if let resume = ResumableDownload.pending(for: destination) {
                let file = try await shop.download(route: shop.get(endpoint: "/exports/2026.zip"), to: destination,
                                                   replacing: true, resumingFrom: resume).value
                print("resumed after \(file.resumedBytes) bytes", error.isCancellation)
            }
        }
    }


    static func progress(shop: ShopAPI, pictureURL: URL) async {
        shop.upload(picture: pictureURL, for: 42)
            .onProgress(in: .main) { progress in
                if progress.direction == .upload { print("sent", progress.fractionCompleted ?? 0) }   // move a progress bar
            }
            .onSuccess { picture in print("stored \(picture.bytes) bytes") }

        for await progress in shop.products(page: 1).progressUpdates {   // ends when the request does
            print(progress.direction, progress.completedBytes, progress.totalBytes ?? -1)
        }
    }

    // MARK: Transports

    #if os(Linux)
    // MARK: Security

    static func security() throws -> [Any] {
        let jar = CookieJar(file: URL(fileURLWithPath: "/var/lib/shop/cookies"))   // kept across launches
        let signedIn = APIConfiguration(cookies: .shared(jar))          // one jar for several APIs
        let stateless = APIConfiguration(cookies: .none)                 // no cookie kept or sent
        let fewer = try CurlTransport(maximumConnectionsPerHost: 4)      // 8 by default; the rest wait
        return [signedIn, stateless, fewer]
    }

    static func choosingATransport() throws -> [Any] {
        let overCurl = TestShopAPI(baseURL: "https://shop.example", transport: try CurlTransport())
        let privateCA = try CurlTransport(trusting: URL(fileURLWithPath: "/etc/shop/ca.pem"))   // that CA alone, not the system's
        let overURLSession = TestShopAPI(baseURL: "https://shop.example", transport: URLSessionTransport())
        return [overCurl, privateCA, overURLSession]
    }
    #endif

    struct CannedTransport: WholeResponseTransport {
        func send(_ request: TransportRequest,
                  completion: @escaping @Sendable (Result<TransportResponse, any Error>) -> Void) -> any TransportTask {
            let response = HTTPURLResponse(url: request.urlRequest.url!, statusCode: 200, httpVersion: nil, headerFields: nil)!
            completion(.success(TransportResponse(httpResponse: response, body: Data("[]".utf8))))
            return NoTask()
        }
    }


    static func transports() async throws -> [Product] {
        let offline = TestShopAPI(baseURL: "https://shop.example", transport: CannedTransport())
        return try await offline.products().value
    }

    // MARK: Testing your API

    final class TestShopAPI: AbstractAPI, BaseAPI, @unchecked Sendable {
        let baseURL: String
        init(baseURL: String, transport: (any Transport)? = nil, clock: (any APIClock)? = nil) {
            self.baseURL = baseURL
            super.init(transport: transport, responseQueue: .global(), clock: clock)
        }
        func products() -> Promise<[Product]> { request(route: get(endpoint: "/products")) }
    }

    /// The snippets' products, and how their request to the closed port ended. Awaited, not
    /// waited for: a test blocking a shared pool thread can starve the pipelines of tests
    /// running beside it.
    static func testing() async throws -> (products: [Product], unreachable: APIError?) {
        let server = try LoopbackServer { request in
            request.path == "/products" ? .json(#"[{"id": 1, "name": "tern", "price": 3}]"#) : ServerResponse(status: 404)
        }
        defer { server.stop() }
        let testShop = TestShopAPI(baseURL: server.baseURL)

        let closed = try ClosedPort()
        let unreachableShop = TestShopAPI(baseURL: closed.baseURL)   // fails: APIError.transportFailed
        let unreachable = unreachableShop.products()

        let stubs = StubTransport()
        stubs.add(Stub(.get, "/products", query: ["page": "1"], answers: .json(#"[{"id": 1, "name": "tern", "price": 3}]"#)))
        stubs.add(Stub(.post, "/login", answers: .status(401), .json(#"{"token": "fresh"}"#)))
        stubs.add(Stub(.get, "/exports/**", answers: StubAnswer.text("zip").chunked(into: 1024).delayed(by: 2)))
        stubs.add(Stub(.get, "/offline", answers: .failure(URLError(.notConnectedToInternet))))
        let stubbedShop = TestShopAPI(baseURL: "https://shop.example", transport: stubs)
        // Later: stubs.requests holds every request, bodies included (file and stream bodies read back).
        _ = stubbedShop

        let clock = TestClock()
        let delayed = Promise(value: 1).delay(30, clock: clock)
        clock.advance(by: 30)                  // the 30 s are over at once
        let clockedShop = TestShopAPI(baseURL: server.baseURL, clock: clock)
        _ = (delayed, clockedShop)

        let refused = await apiError(of: unreachable)   // settled while the port is still reserved
        return (try await testShop.products().value, refused)
    }

    // MARK: Limits

    static func limits() -> [Any] {
        let bounded = APIConfiguration(maximumResponseSize: .megabytes(16))             // 64 MiB by default
        let bigExport = RequestOptions(timeout: .infinity, maximumResponseSize: .unlimited)
        return [bounded, bigExport]
    }

    // MARK: Authentication

    struct Tokens: Decodable, Sendable { let access: String; let refresh: String }

    final class TokenStore: APIDelegate, @unchecked Sendable {   // its one var is behind the lock
        private let lock = NSLock()
        private var tokens: Tokens
        private let tokenURL: String
        init(_ tokens: Tokens, tokenURL: String) { self.tokens = tokens; self.tokenURL = tokenURL }

        var current: Tokens {
            lock.lock(); defer { lock.unlock() }
            return tokens
        }

        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer \(current.access)", forHTTPHeaderField: "Authorization")
        }

        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            let refreshed: Promise<Tokens> = api.request(
                route: .post(tokenURL),
                parameters: FormParameters(["grant_type": "refresh_token", "refresh_token": current.refresh]),
                options: RequestOptions(authenticates: false))      // not signed, not held for itself
            return refreshed.map { [self] new in
                lock.lock(); defer { lock.unlock() }
                tokens = new
            }
        }
    }

    static func authentication() -> [AnyObject] {
        let store = TokenStore(Tokens(access: "a-1", refresh: "r-1"), tokenURL: "https://shop.example/oauth/token")
        let securedShop = ShopAPI(responseParser: JSONParser())
        securedShop.delegate = store                                 // held weakly: keep `store`
        return [store, securedShop]
    }

    // MARK: Retries, adapters, plugins

    struct Versioned: RequestAdapter {
        func adapt(_ request: inout URLRequest) throws {
            request.setValue("2024-06-01", forHTTPHeaderField: "API-Version")
        }
    }

    struct Metrics: Plugin {
        func didReceive(_ result: Result<Response, APIError>, for request: URLRequest, api: AbstractAPI) {
            if case .success(let response) = result { print(request.url?.path ?? "", response.timing.duration) }
        }
    }

    static func observing() -> [Any] {
        let activity = NetworkActivity { count in print("\(count) in flight") }
        let logger = LoggerPlugin(level: .verbose, redactingHeaders: ["X-Api-Key"], redactingQueryKeys: ["token"], includesCURL: true)
        let observed = APIConfiguration(adapters: [Versioned()], plugins: [Metrics(), activity, logger])
        let traced = RequestOptions(plugins: [Metrics()])            // for one request, after the API's
        return [observed, traced]
    }

    static func retries() -> [Any] {
        let patient = APIConfiguration(retryPolicy: RetryPolicy(maxRetries: 4, baseDelay: 0.2),
                                       retryBudget: RetryBudget(ratio: 0.1, minimumRetries: 5, window: 10))
        let once = RequestOptions(retryPolicy: .never)
        return [patient, once]
    }

    // MARK: Redirects

    static func redirects() -> [Any] {
        let careful = APIConfiguration(redirectPolicy: RedirectPolicy(maximumRedirects: 3, sensitiveHeaders: ["X-Api-Key"]))
        let raw = RequestOptions(redirectPolicy: .never)                  // the 3xx is the response
        let homeOnly = RedirectPolicy { redirect in redirect.isCrossOrigin ? .doNotFollow : .follow }
        return [careful, raw, homeOnly]
    }
}

@Suite(.timeLimit(.minutes(1))) struct ReadmeTests {
    @Test func theSampleDataSnippetRuns() async throws {
        let products = try await Readme.sampleData(fixtureURL: URL(fileURLWithPath: "/nonexistent"))
        #expect(products.map(\.name) == ["Arctic tern"])
    }

    @Test func theCannedTransportAnswers() async throws {
        #expect(try await Readme.transports().isEmpty)
    }

    @Test func theTokenStoreSignsAndRefreshesAgainstATokenServer() async throws {
        // The README's store, with a loopback token server in place of shop.example.
        let server = try LoopbackServer { request in
            switch request.path {
            case "/oauth/token":
                let form = String(decoding: request.body, as: UTF8.self)
                return form.contains("refresh_token=r-1") ? .json(#"{"access": "a-2", "refresh": "r-2"}"#) : ServerResponse(status: 400)
            default:
                return request.headers["Authorization"] == "Bearer a-2" ? .json(#"[]"#) : ServerResponse(status: 401)
            }
        }
        defer { server.stop() }
        let store = Readme.TokenStore(Readme.Tokens(access: "a-1", refresh: "r-1"), tokenURL: server.baseURL + "/oauth/token")
        let api = Readme.TestShopAPI(baseURL: server.baseURL)
        api.delegate = store
        #expect(try await api.products().value.isEmpty)
        #expect(store.current.access == "a-2")
        withExtendedLifetime(store) {}
    }

    @Test func theTestingSnippetRuns() async throws {
        let (products, error) = try await Readme.testing()
        #expect(products.map(\.name) == ["tern"])
        guard case APIError.transportFailed(let failure)? = error else {
            Issue.record("expected transportFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.urlError?.code == .cannotConnectToHost)
    }

    @Test func theCustomEncoderAndThePageParserRun() async throws {
        let echo = try await TestAPI().echo(.post, Readme.PlainText(text: "hello"))
        #expect(String(decoding: echo.body, as: UTF8.self) == "hello")
        #expect(echo.header("Content-Type") == "text/plain; charset=utf-8")
        let pages = try TestAPI(parser: Readme.PageParser())
        let products: [Product] = try await pages.request(route: pages.get(endpoint: "/page")).value
        #expect(products.count == 1)
    }

    @Test func theQueryRulesAreAsDocumented() throws {
        var draft = RequestDraft(method: .get, url: URL(string: "https://x.io/")!)
        try Readme.noBrackets().encode(into: &draft)
        #expect(draft.url.query == "on=true&tags=a&tags=b")
    }

    @Test func thePromiseChainRuns() async throws {
        let users = Readme.UsersAPI(responseQueue: .global())
        let favorites = try await users.requestUser().then(in: .global(), users.favorites(of:)).value
        #expect(favorites == ["tern"])
    }
}
