import Synchronization
import Tern
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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

/// The README's shop service, and a few endpoints more for the rest of the tour: a struct that
/// Swift checks, holding a client whose configuration has the shop's base URL.
struct ShopAPI: Sendable {
    let client: APIClient

    init(baseURL: String) {
        client = APIClient(responseParser: JSONParser(errorType: ShopError.self), configuration: APIConfiguration(name: "demo", baseURL: baseURL),
                           responseQueue: .global())
    }

    func products(page: Int) -> Promise<[Product]> {
        client.request(route: .get("/products"), parameters: URLParameters(["page": page, "tags": ["a", "b"]]))
    }

    func add(_ product: Product) -> Promise<Product> {
        client.request(route: .post("/products"), parameters: JSONParameters(product, headers: ["X-Trace": "1"]))
    }

    func login(user: String, password: String) -> Promise<Session> {
        client.request(route: .post("/login"), parameters: FormParameters(["user": user, "password": password]))
    }

    func upload(picture: URL, for id: Int) -> Promise<Picture> {
        let part = Part(name: "picture", fileURL: picture)   // streamed from disk, typed by its extension
        return client.request(route: .patch("/products/\(id)/picture"),
                              parameters: MultipartParameters(parts: [part, Part(name: "caption", value: "front")]))
    }

    func delete(_ id: Int) -> Promise<Void> { client.request(route: .delete("/products/\(id)")) }

    func slow() -> Promise<Void> { client.request(route: .get("/slow"), options: RequestOptions(timeout: 0.3)) }

    func stalled() -> Promise<Void> { client.request(route: .get("/slow")) }

    func orders() -> Promise<[Product]> { client.request(route: .get("/orders")) }

    func export(to destination: URL, resumingFrom resume: ResumableDownload? = nil) -> Promise<DownloadedFile> {
        client.download(route: .get("/export"), to: destination, replacing: true, resumingFrom: resume,
                        options: RequestOptions(retryPolicy: .never))
    }

    func whoami() -> Promise<Whoami> { client.request(route: .get("/moved")) }

    func flaky(log: LoggerPlugin) -> Promise<[Product]> {
        client.request(route: .get("/flaky"), options: RequestOptions(retryPolicy: RetryPolicy(baseDelay: 0.05), plugins: [log]))
    }
}

/// The shop's requests as values, for those who prefer them to methods.
enum Shop {
    static let catalog: APIRequest<[Product]> = APIRequest(.get("/catalog"))
}

/// Signs with the shop's token and gets a new one when the shop says it expired. What changes
/// sits in a `Mutex`, so Swift checks that it is safe to share: no `@unchecked`.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
final class DemoTokens: APIDelegate {
    private let state = Mutex((token: "expired", refreshes: 0))
    private let tokenURL: String

    init(baseURL: String) {
        tokenURL = baseURL + "/token"
    }

    var refreshCount: Int { state.withLock { $0.refreshes } }

    func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
        let token = state.withLock { $0.token }
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
    }

    func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
        let reply: Promise<Session> = api.request(route: .post(tokenURL), options: RequestOptions(authenticates: false))
        return reply.map { [self] session in state.withLock { $0 = (session.token, $0.refreshes + 1) } }
    }
}
