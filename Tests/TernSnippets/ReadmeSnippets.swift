import Foundation
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Every snippet of README.md and the DocC articles, compiled as a user's module is (public API
// alone), so that they cannot drift from the API; ReadmeTests runs some. Declarations stand as they are in the documents; statements
// sit in functions. `SnippetTests` checks that each snippet appears here line for line.
enum Readme {
    // MARK: Defining an API

    struct Product: Codable, Sendable { let id: Int; let name: String; let price: Int }
    struct Session: Codable, Sendable { let token: String }
    struct Picture: Codable, Sendable { let bytes: Int }
    struct ShopError: Codable, Error, Sendable { let code: Int; let message: String }

    final class ShopAPI: AbstractAPI, @unchecked Sendable {   // only `let`s of Sendable types
        func products(page: Int) -> Promise<[Product]> {
            request(route: .get("/products"), parameters: URLParameters(["page": page, "tags": ["a", "b"]]))
        }

        func add(_ product: Product) -> Promise<Product> {
            request(route: .post("/products"), parameters: JSONParameters(product, headers: ["X-Trace": "1"]))
        }

        func login(user: String, password: String) -> Promise<Session> {
            request(route: .post("/login"), parameters: FormParameters(["user": user, "password": password]))
        }

        func upload(picture: URL, for id: Int) -> Promise<Picture> {
            let part = Part(name: "picture", fileURL: picture)   // streamed from disk, typed by its extension
            return request(route: .patch("/products/\(id)/picture"),
                           parameters: MultipartParameters(parts: [part, Part(name: "caption", value: "front")]))
        }

        func delete(_ id: Int) -> Promise<Void> { request(route: .delete("/products/\(id)")) }
    }

    static func definingAnAPI() -> [Any] {
        let shop = ShopAPI(configuration: .production)
        let stagingShop = ShopAPI(configuration: .staging)
        return [shop, stagingShop, signing(shop)]
    }

    final class Signer: APIDelegate {
        let token: String
        init(token: String) { self.token = token }
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        }
    }

    final class NotesAPI: AbstractAPI, @unchecked Sendable {
        init(configuration: APIConfiguration, transport: (any Transport)? = nil) {
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            super.init(responseParser: JSONParser(decoder: decoder), configuration: configuration,
                       transport: transport, responseQueue: .global())
        }
    }

    static func notesSigned(by tokens: Signer) -> NotesAPI {
        let notes = NotesAPI(configuration: .production, transport: StubTransport())
        notes.delegate = tokens
        return notes
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
        static let catalog: APIRequest<[Product]> = APIRequest(.get("/products"))
        static func product(_ id: Int) -> APIRequest<Product> { APIRequest(.get("/products/\(id)")) }
        static func remove(_ id: Int) -> APIRequest<Void> { APIRequest(.delete("/products/\(id)")) }
        static let status: APIRequest<Response> = APIRequest(.get("/status"))
        static let search: APIRequest<[Product]> = APIRequest(.post("/search"), parameters: JSONParameters(["term": "boots"]),
                                                              options: RequestOptions(timeout: 5))
    }

    static func requestValues(shop: ShopAPI) async throws {
        let product = try await shop.send(Shop.product(7)).value
        try await shop.send(Shop.remove(7)).value
        _ = product
    }

    // MARK: Pagination

    static func pagination(shop: ShopAPI) async throws -> [Product] {
        let boots = APIRequest<[Product]>(.get("/products"), parameters: URLParameters(["q": "boots", "color": "red"]))
        var loaded: [Product] = []
        for try await page in shop.pages(boots, style: .pageNumber()) {
            loaded += page.elements
        }
        return loaded
    }

    static func pageStyles(shop: ShopAPI) -> [Any] {
        let numbered = PageStyle.pageNumber(parameter: "page", first: 1)              // ?page=1, 2, … until an empty page
        let cursors = PageStyle.cursor(parameter: "after", from: .body("meta.next"))  // or .header("X-Next-Cursor")
        let links = PageStyle.linkHeader                                              // Link: <…?page=2>; rel="next"
        let wrapped = shop.pages(Shop.catalog, style: cursors, collectionKeyPath: "data.items")
        return [numbered, links, wrapped]
    }

    /// Pagination's named return type.
    struct PagedShop {
        let shop: ShopAPI

        func catalogPages() -> ResponseSequence<Page<Product>> {
            shop.pages(Shop.catalog, style: .linkHeader)
        }
    }

    static func pageSequence(shop: ShopAPI) async throws {
        for try await page in shop.pages(Shop.catalog, style: .linkHeader) {
            print(page.position, page.elements.count)   // page.number is nil for links and cursors
        }
    }
}

// MARK: Sample data (at file scope, as the README writes it)

private typealias ShopAPI = Readme.ShopAPI
typealias Product = Readme.Product


// MARK: Uploads and downloads (an extension, so that the README's ShopAPI stays as shown)

extension Readme.ShopAPI {
    func restore(_ archive: URL) -> Promise<Void> {   // streamed from disk as it is sent
        request(route: .put("/backups/latest"), parameters: BodyParameters(archive, contentType: "application/zip"))
    }

    func publish(_ recording: URL, length: Int64) -> Promise<Void> {   // a new stream for each attempt
        request(route: .post("/recordings"),
                parameters: BodyParameters(length: length, contentType: "audio/ogg") { InputStream(url: recording)! })
    }

    func export(_ year: Int, to destination: URL) -> Promise<DownloadedFile> {
        download(route: .get("/exports/\(year).zip"), to: destination, replacing: true)
    }
}

extension Readme {
    // MARK: Parameters

    static func noBrackets() -> URLParameters {
        let query = URLParameters(["tags": ["a", "b"], "on": true], encoding: QueryEncoding(arrays: .noBrackets, bools: .literal))
        // ?on=true&tags=a&tags=b
        return query
    }

    static func jsonPart(product: Product, picture: URL) throws -> MultipartParameters {
        let metadata = Part(name: "metadata", data: try JSONEncoder().encode(product), mimeType: "application/json")
        let photo = Part(name: "photo", fileURL: picture)   // its file name and type from the URL
        let upload = MultipartParameters(parts: [metadata, photo])
        return upload
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

    struct FilesAPI: Sendable {
        let client: APIClient
        func file(_ id: Int) -> Promise<Product> { client.request(route: .get("/files/\(id)")) }      // decoded
        func raw(_ id: Int) -> Promise<Data> { client.request(route: .get("/files/\(id)/raw")) }     // the body
        func readme() -> Promise<String> { client.request(route: .get("/README")) }                  // text, by charset
        func whole(_ id: Int) -> Promise<Response> { client.request(route: .get("/files/\(id)")) }   // everything
        func exists(_ id: Int) -> Promise<Void> { client.request(route: .head("/files/\(id)")) }     // nothing
        func maybe(_ id: Int) -> Promise<Product?> { client.request(route: .get("/maybe/\(id)")) }   // nil when empty
    }

    static func linkHeaders(shop: ShopAPI) async throws -> URL? {
        let firstPage: Response = try await shop.request(route: .get("/products")).value
        let nextPage = firstPage.link(rel: "next")   // nil on the last page
        return nextPage
    }

    static func errorBodiesRefused() -> APIConfiguration {
        let refusesErrorBodies = Validation.custom { response in
            (200..<300).contains(response.statusCode) && !response.body.starts(with: Data(#"{"error""#.utf8))
        }
        let strict = APIConfiguration(baseURL: "https://shop.example", validation: refusesErrorBodies)
        return strict
    }

    static func keyPathParser() -> APIClient {
        let parser = JSONParser(decoder: JSONDecoder(), keyPath: "data.items", errorType: ShopError.self)
        let client = APIClient(responseParser: parser, configuration: APIConfiguration(baseURL: "https://shop.example"))
        return client
    }

    final class PageParser: JSONParser, @unchecked Sendable {
        struct Page<T: Decodable>: Decodable { let page: Int; let results: T }
        override func parse<Value: Decodable>(_ type: Value.Type, from response: Response) throws -> Value {
            try super.parse(Page<Value>.self, from: response).results      // {"page": 1, "results": [...]}
        }
    }

    struct CSVParser: ResponseParser {
        struct Unsupported: Error { let type: String }

        var acceptHeader: String? { "text/csv" }

        // A format with no decoder of its own says which types it makes: here rows of fields.
        func parse<Value: Decodable>(_ type: Value.Type, from response: Response) throws -> Value {
            let rows = String(decoding: response.body, as: UTF8.self).split(whereSeparator: \.isNewline)
                .map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
            guard let value = rows as? Value else { throw Unsupported(type: "\(type)") }
            return value
        }
    }

    static func reports() -> Promise<[[String]]> {
        let reports = APIClient(responseParser: CSVParser(), configuration: .production)
        let sales: Promise<[[String]]> = reports.request(route: .get("/reports/sales.csv"))
        return sales
    }

    // MARK: Errors, cancellation, queues

    static func errorsAndCancellation(shop: ShopAPI) async throws {
        struct ShopError: Error, Decodable { let code: Int; let message: String }   // the server's error body

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
        pending.cancel()                            // stops the transfer; settles as .cancelled

        let task = Task { try await shop.products(page: 1).value }
        task.cancel()                               // the same, from Swift concurrency

        let report: Promise<Data> = shop.request(route: .get("/report"), options: RequestOptions(timeout: 2.5))
        _ = report

        let serverShop = ShopAPI(responseParser: JSONParser(), responseQueue: .global())
        let products = try await serverShop.products(page: 1).value
        _ = products
    }

    // MARK: Promises

    struct User: Sendable {}
    final class UsersAPI: AbstractAPI, @unchecked Sendable {
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
                let file = try await shop.download(route: .get("/exports/2026.zip"), to: destination,
                                                   replacing: true, resumingFrom: resume).value
                print("resumed after \(file.resumedBytes) bytes", error.isCancellation)
            }
        }
    }

    static func interrupt(shop: ShopAPI, destination: URL) async {
        signal(SIGINT, SIG_IGN)                              // Ctrl-C now reaches the source alone
        let download = shop.export(2026, to: destination)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .main)
        interrupt.setEventHandler { download.cancel() }
        interrupt.resume()
        _ = await download.result                            // cancelled: the bytes are kept for pending(for:)
        interrupt.cancel()
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
        let fewer = try CurlTransport(maximumConnectionsPerHost: 4, maximumConnections: 32)   // 8 and 64 by default; the rest wait
        return [signedIn, stateless, fewer]
    }

    #endif

    static func pinning() throws -> APIClient {
        let pins = try CertificatePins([
            "shop.example": ["sha256/r8udi/Mxd6pLOS73t7GpHAvPdwWQiICjvcJqgsyjpsE=",      // the server's key
                             "sha256/YLh1dUR9y6Kja30RrAn7JKnbQG/uEtLMkBgFF2Fuihg="],     // a backup, not yet deployed
            "*.cdn.shop.example": ["sha256/Vjs8r4z+80wjNcr1YKepWQboSIRi63WsWXhIMN+eWys="],
        ])
        let pinnedShop = APIClient(configuration: APIConfiguration(baseURL: "https://shop.example/api/v2", certificatePins: pins))
        return pinnedShop
    }

    // MARK: Limits

    static func metrics(client: APIClient) async throws {
        let whole: Response = try await client.request(route: .get("/products")).value
        for exchange in whole.metrics {
            print(exchange.statusCode ?? 0, exchange.firstByte ?? 0, exchange.reusedConnection ?? false)
        }
    }

    static func limits() -> [Any] {
        let bounded = APIConfiguration(maximumResponseSize: .megabytes(16))             // 64 MiB by default
        let bigExport = RequestOptions(timeout: .infinity, maximumResponseSize: .unlimited)
        return [bounded, bigExport]
    }

    // MARK: Authentication (the store is in TourSnippets)

    // MARK: Retries, adapters, plugins

    struct Versioned: RequestAdapter {
        func adapt(_ request: inout URLRequest) throws {
            request.setValue("2024-06-01", forHTTPHeaderField: "API-Version")
        }
    }

    struct Metrics: Plugin {
        func observe(_ event: PluginEvent, api: APIContext) {
            guard case .didReceive(.success(let response), let request) = event, let transfer = response.metrics.last else { return }
            let connection = transfer.reusedConnection.map { $0 ? "reused" : "new" } ?? "-"   // nil: from the cache, or not said
            print(request.url?.path ?? "", response.duration, transfer.firstByte ?? 0, connection)
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

    static func retryingReadsAlone() -> RetryPolicy {
        let readsOnly = RetryPolicy(methods: [.get, .head])
        return readsOnly
    }

    static func retryingAPost() -> RetryPolicy {
        let rateLimited = RetryPolicy(methods: [.post], statusCodes: [429, 503], urlErrorCodes: [.cannotConnectToHost])
        return rateLimited
    }

    // MARK: Redirects

    static func redirects() -> [Any] {
        let careful = APIConfiguration(redirectPolicy: RedirectPolicy(maximumRedirects: 3, sensitiveHeaders: ["X-Api-Key"]))
        let raw = RequestOptions(redirectPolicy: .never)                  // the 3xx is the response
        let homeOnly = RedirectPolicy { redirect in redirect.isCrossOrigin ? .doNotFollow : .follow }
        return [careful, raw, homeOnly]
    }
}

// MARK: Moya's targets as one enum (ComingFromAnotherLibrary)

extension Readme {
    enum ShopTarget: Sendable {
        case products(page: Int)
        case product(id: Int)
        case add(Product)
        case remove(id: Int)

        var route: Route {
            switch self {
            case .products: .get("/products")
            case .product(let id): .get("/products/\(id)")
            case .add: .post("/products")
            case .remove(let id): .delete("/products/\(id)")
            }
        }

        var parameters: (any RequestParameters)? {
            switch self {
            case .products(let page): URLParameters(["page": page])
            case .add(let product): JSONParameters(product)
            case .product, .remove: nil
            }
        }
    }

    struct TargetedShop: Sendable {
        let client: APIClient

        func request<Value: Decodable & Sendable>(_ target: ShopTarget) -> Promise<Value> {
            client.request(route: target.route, parameters: target.parameters)
        }

        func request(_ target: ShopTarget) -> Promise<Void> {
            client.request(route: target.route, parameters: target.parameters)
        }
    }

    static func targets(_ targetedShop: TargetedShop) async throws -> [Product] {
        let firstPage: [Product] = try await targetedShop.request(.products(page: 1)).value
        try await targetedShop.request(.remove(id: 7)).value
        return firstPage
    }
}
