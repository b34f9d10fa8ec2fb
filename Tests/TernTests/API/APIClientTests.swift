import Dispatch
import Foundation
import Testing
import Tern

/// A service the way the README teaches it: a struct that Swift 6 checks, holding a client.
/// (Its stored properties are checked: a non-`Sendable` one here would not compile.)
private struct Shop: Sendable {
    let client: APIClient

    func echo(_ path: String) -> Promise<Echo> { client.request(route: .get(path)) }
    func products() -> Promise<[Product]> { client.request(route: .get("/products")) }
}

/// A subclass of the older kind, whose base URL is a property.
private final class LegacyShop: AbstractAPI, BaseAPI, @unchecked Sendable {
    let baseURL: String
    init(baseURL: String, configuration: APIConfiguration) {
        self.baseURL = baseURL
        super.init(configuration: configuration, transport: TestTransport.make(), responseQueue: .global())
    }
}

@Suite(.onTestThreads) struct APIClientTests {
    private func client(baseURL: String?) -> APIClient {
        APIClient(configuration: APIConfiguration(baseURL: baseURL, retryPolicy: .never), transport: TestTransport.make(),
                  responseQueue: .global())
    }

    @Test func aRelativeRouteJoinsTheConfigurationsBaseURL() async throws {
        let base = try TestServer.baseURL
        let shop = Shop(client: client(baseURL: base + "/echo/"))
        let echo = try await shop.echo("/v2/items?page=2").value
        #expect(echo.path == "/echo/v2/items")
        #expect(echo.query == "page=2")
        #expect(try await Shop(client: client(baseURL: base)).products().value.map(\.name) == ["tern", "gull"])
    }

    @Test func anAbsoluteRouteIgnoresTheBaseURL() async throws {
        let shop = Shop(client: client(baseURL: "http://127.0.0.1:1/nowhere"))
        let echo = try await shop.echo(try TestServer.baseURL + "/echo/absolute").value
        #expect(echo.path == "/echo/absolute")
    }

    @Test func aRelativeRouteWithNoBaseURLFailsAndSaysWhy() async throws {
        let promise = Shop(client: client(baseURL: nil)).products()
        let error = await apiError(of: promise)
        guard case .invalidRequest(let invalid) = error else {
            Issue.record("expected invalidRequest, got \(String(describing: error))")
            return
        }
        #expect(invalid.reason == .invalidURL("/products"))
        #expect(invalid.description.contains("APIConfiguration.baseURL"))
    }

    /// A base URL written without its scheme (`127.0.0.1:28481`): the request fails before it is
    /// built, saying the scheme is missing and how to write it, not that a doubled relative URL
    /// has no base URL; the same for a request value and a paginated one.
    @Test(arguments: ["127.0.0.1:28481", "shop.example/api/v2"])
    func aBaseURLWithoutASchemeFailsSayingSo(base: String) async throws {
        let api = client(baseURL: base)
        let errors = [
            await apiError(of: Shop(client: api).products()),
            await apiError(of: api.send(APIRequest<Echo>(.get("/notes")))),
        ]
        for error in errors {
            guard case .invalidRequest(let invalid) = error else {
                Issue.record("expected invalidRequest, got \(String(describing: error))")
                continue
            }
            #expect(invalid.description.contains("the base URL \"\(base)\" has no scheme"), "\(invalid)")
            #expect(invalid.description.contains("https://\(base)"), "\(invalid)")
        }
    }

    @Test func aRequestValueJoinsTheConfigurationsBaseURL() async throws {
        let api = client(baseURL: try TestServer.baseURL + "/echo")
        let echo = try await api.send(APIRequest<Echo>(.get("/sent"), parameters: URLParameters(["q": "1"]))).value
        #expect(echo.path == "/echo/sent")
        #expect(echo.query == "q=1")
    }

    @Test func aBaseAPIJoinsRelativeRoutesToItsBaseURLUnlessItsConfigurationNamesOne() async throws {
        let base = try TestServer.baseURL
        let legacy = LegacyShop(baseURL: base + "/echo/property", configuration: APIConfiguration(retryPolicy: .never))
        let fromProperty: Echo = try await legacy.request(route: .get("/a")).value
        #expect(fromProperty.path == "/echo/property/a")

        let configured = LegacyShop(baseURL: "http://127.0.0.1:1", configuration: APIConfiguration(baseURL: base + "/echo/configured",
                                                                                                    retryPolicy: .never))
        let fromConfiguration: Echo = try await configured.request(route: .get("/a")).value
        #expect(fromConfiguration.path == "/echo/configured/a")
    }
}
