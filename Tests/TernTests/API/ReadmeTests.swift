import Foundation
import Testing
import Tern
import TernTesting

// Every snippet of README.md, compiled as part of the test target, so that the README cannot
// drift from the API. Declarations stand as they are in the README; statements sit in functions.
// Keep the two in step when either changes.
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
        api.repositories(of: "apple")
            .onSuccess { repositories in print(repositories.count) }
            .onError { error in print(error) }
            .finally { print("done") }

        let repositories = try await api.repositories(of: "apple").value   // async/await bridge
        _ = repositories
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

    final class Signer: APIDelegate {
        let token: String
        init(token: String) { self.token = token }
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        }
    }

    static func definingAnAPI() -> [Any] {
        let shop = ShopAPI(responseParser: JSONParser())
        let staging = APIConfiguration(name: "staging", commonHeaders: ["X-Client": "tern-demo/1.0"],
                                       timeout: 20, cachePolicy: .reloadIgnoringLocalCacheData)
        let stagingShop = ShopAPI(configuration: staging)
        let signer = Signer(token: "t-42")
        shop.delegate = signer
        return [shop, stagingShop, signer]
    }

    // MARK: Parameters

    static let noBrackets = URLParameters(["tags": ["a", "b"], "on": true], encoding: QueryEncoding(arrays: .noBrackets, bools: .literal))

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

    static let parser = JSONParser(decoder: JSONDecoder(), keyPath: "data.items", errorType: ShopError.self)

    final class PageParser: JSONParser, @unchecked Sendable {
        struct Page<T: Decodable>: Decodable { let page: Int; let results: T }
        override func getInstance<T: Decodable>(from data: Data, response: HTTPURLResponse) throws -> T {
            try decoder.decode(Page<T>.self, from: data).results      // {"page": 1, "results": [...]}
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

    // MARK: Testing your API

    final class TestShopAPI: AbstractAPI, BaseAPI, @unchecked Sendable {
        let baseURL: String
        init(baseURL: String) {
            self.baseURL = baseURL
            super.init(responseQueue: .global())
        }
        func products() -> Promise<[Product]> { request(route: get(endpoint: "/products")) }
    }

    static func testing() throws -> [Product] {
        let server = try LoopbackServer { request in
            request.path == "/products" ? .json(#"[{"id": 1, "name": "tern", "price": 3}]"#) : ServerResponse(status: 404)
        }
        defer { server.stop() }
        let testShop = TestShopAPI(baseURL: server.baseURL)
        return try testShop.products().wait()
    }
}

@Suite(.timeLimit(.minutes(1))) struct ReadmeTests {
    @Test func theTestingSnippetRuns() throws {
        #expect(try Readme.testing().map(\.name) == ["tern"])
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
        try Readme.noBrackets.encode(into: &draft)
        #expect(draft.url.query == "on=true&tags=a&tags=b")
    }

    @Test func thePromiseChainRuns() async throws {
        let users = Readme.UsersAPI(responseQueue: .global())
        let favorites = try await users.requestUser().then(in: .global(), users.favorites(of:)).value
        #expect(favorites == ["tern"])
    }
}
