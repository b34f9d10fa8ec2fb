import Foundation
import Testing
import Tern
import TernTesting

/// Request values sent through the whole pipeline, with each kind of value they answer.
@Suite(.onTestThreads) struct APIRequestTests {
    let api: TestAPI

    init() throws {
        api = try TestAPI()
    }

    /// Requests as an app would declare them, in one place.
    enum Shop {
        static let products: APIRequest<[Product]> = APIRequest(.get("/products"))
        static func create(_ product: Product) -> APIRequest<Echo> { APIRequest(.post("/echo"), parameters: JSONParameters(product)) }
        static func delete(_ id: Int) -> APIRequest<Void> { APIRequest(.delete("/echo/\(id)")) }
        static let raw: APIRequest<Data> = APIRequest(.get("/products"))
        static let text: APIRequest<String> = APIRequest(.get("/latin1"))
        static let whole: APIRequest<Response> = APIRequest(.get("/products"))
    }

    @Test func aDecodableValue() async throws {
        let products = try await api.send(Shop.products).value
        #expect(products == [Product(name: "tern", price: 3), Product(name: "gull", price: 5)])
    }

    @Test func dataComesAsItWasSentAndStringsAsText() async throws {
        let data = try await api.send(Shop.raw).value
        #expect(String(decoding: data, as: UTF8.self) == #"[{"name": "tern", "price": 3}, {"name": "gull", "price": 5}]"#)
        #expect(try await api.send(Shop.text).value == "café")
    }

    @Test func voidAndTheWholeResponse() async throws {
        try await api.send(Shop.delete(7)).value
        let response = try await api.send(Shop.whole).value
        #expect(response.statusCode == 200)
        #expect(response.request.httpMethod == "GET")
    }

    @Test func parametersMethodAndHeadersReachTheServer() async throws {
        let echo = try await api.send(Shop.create(Product(name: "tern", price: 3))).value
        #expect(echo.method == "POST")
        #expect(echo.header("Content-Type") == "application/json")
        #expect(try JSONDecoder().decode(Product.self, from: echo.body) == Product(name: "tern", price: 3))
        let search: APIRequest<Echo> = APIRequest(.get("/echo"), parameters: URLParameters(["q": "tern"], headers: ["X-Shop": "north"]))
        let sent = try await api.send(search).value
        #expect(sent.query == "q=tern" && sent.header("X-Shop") == "north")
    }

    @Test func optionsApplyToThisRequestOnly() async throws {
        let inEnvelope: APIRequest<[Product]> = APIRequest(.get("/envelope"), options: RequestOptions(parser: JSONParser(keyPath: "data.items")))
        #expect(try await api.send(inEnvelope).value == [Product(name: "tern", price: 3)])
        let strict: APIRequest<Void> = APIRequest(.delete("/status/202"), options: RequestOptions(validation: .statusCodes(200..<202)))
        #expect(await apiError(of: api.send(strict))?.caseName == "unacceptableStatus")
        #expect(await apiError(of: api.send(APIRequest<[Product]>(.get("/envelope"))))?.caseName == "parsingFailed")
    }

    @Test func aRequestValueIsSignedAndReplayedAfterARefresh() async throws {
        let server = try AuthServer()
        let api = AuthAPI(server)
        let store = SessionStore(server, token: "expired")
        api.delegate = store
        let secure: APIRequest<OK> = APIRequest(.get("/secure/1"))
        #expect(try await api.send(secure).value.ok)
        #expect(server.refreshCount == 1)
    }

    @Test func anAbsoluteURLNeedsNoBaseURLAndARelativePathNeedsOne() async throws {
        final class Plain: AbstractAPI, @unchecked Sendable {}
        let plain = Plain(responseQueue: .global())
        let absolute: APIRequest<[Product]> = APIRequest(.get(try TestServer.baseURL + "/products"))
        #expect(try await plain.send(absolute).value.count == 2)
        let relative: APIRequest<[Product]> = APIRequest(.get("/products"))
        let error = await apiError(of: plain.send(relative))
        guard case .invalidRequest(let failure)? = error, case .invalidURL("/products") = failure.reason else {
            Issue.record("expected invalidURL, got \(String(describing: error))")
            return
        }
    }

    @Test func aRequestValueIsAValueThatCanBeChanged() async throws {
        var request = Shop.products
        request.path = "/bad-products"
        #expect(await apiError(of: api.send(request))?.caseName == "parsingFailed")
        #expect(try await api.send(Shop.products).value.count == 2)
        let generic = APIRequest<[Product]>(.get("/products"))
        #expect(generic.method == .get && generic.path == "/products")
    }
}
