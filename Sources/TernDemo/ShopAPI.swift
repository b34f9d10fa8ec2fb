import Tern

struct Product: Codable, Sendable {
    let id: Int
    let name: String
    let price: Int
}

struct Session: Codable, Sendable {
    let token: String
}

struct Picture: Codable, Sendable {
    let bytes: Int
    let caption: String
}

struct Whoami: Codable, Sendable {
    let authorization: String
}

struct ShopError: Codable, Error, Sendable {
    let code: Int
    let message: String
}

/// The README's shop client, word for word, and a few endpoints more for the rest of the tour.
final class ShopAPI: AbstractAPI, BaseAPI, @unchecked Sendable {
    let baseURL: String

    init(baseURL: String) {
        self.baseURL = baseURL
        super.init(responseParser: JSONParser(errorType: ShopError.self), responseQueue: .global())
    }

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

    func slow() -> Promise<Void> { request(route: get(endpoint: "/slow"), options: RequestOptions(timeout: 0.3)) }

    func stalled() -> Promise<Void> { request(route: get(endpoint: "/slow")) }

    func orders() -> Promise<[Product]> { request(route: get(endpoint: "/orders")) }

    func export(to destination: URL, resumingFrom resume: ResumableDownload? = nil) -> Promise<DownloadedFile> {
        download(route: get(endpoint: "/export"), to: destination, replacing: true, resumingFrom: resume,
                 options: RequestOptions(retryPolicy: .never))
    }

    func whoami() -> Promise<Whoami> { request(route: get(endpoint: "/moved")) }

    func flaky(log: LoggerPlugin) -> Promise<[Product]> {
        request(route: get(endpoint: "/flaky"), options: RequestOptions(retryPolicy: RetryPolicy(baseDelay: 0.05), plugins: [log]))
    }
}

/// The shop's requests as values, for those who prefer them to methods.
enum Shop {
    static let catalog: APIRequest<[Product]> = .get("/catalog")
}

/// Signs with the shop's token and gets a new one when the shop says it expired.
final class DemoTokens: APIDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var token = "expired"
    private var refreshes = 0
    private let tokenURL: String

    init(baseURL: String) {
        tokenURL = baseURL + "/token"
    }

    var refreshCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return refreshes
    }

    func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
        lock.lock()
        defer { lock.unlock() }
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
    }

    func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
        let reply: Promise<Session> = api.request(route: .post(tokenURL), options: RequestOptions(authenticates: false))
        return reply.map { [self] session in
            lock.lock()
            defer { lock.unlock() }
            token = session.token
            refreshes += 1
        }
    }
}
