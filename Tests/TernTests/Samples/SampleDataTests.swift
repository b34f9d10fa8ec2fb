import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Opera's stub mode: an API that answers every request with the sample data its endpoint
/// declares, with the rest of the pipeline running as usual, and no socket opened.
@Suite(.onTestThreads) struct SampleDataTests {
    /// A shop whose endpoints carry sample data, pointed at a port that refuses connections.
    final class SampleShop: AbstractAPI, BaseAPI, @unchecked Sendable {
        let baseURL: String

        init(baseURL: String, usesSampleData: Bool, plugins: [any Plugin] = []) {
            self.baseURL = baseURL
            super.init(responseParser: JSONParser(errorType: ShopError.self),
                       configuration: APIConfiguration(retryPolicy: .never, plugins: plugins, usesSampleData: usesSampleData),
                       responseQueue: .global())
        }

        func products() -> Promise<[Product]> {
            request(route: get(endpoint: "/products"),
                    options: RequestOptions(sampleData: .json(#"[{"name": "tern", "price": 3}]"#)))
        }

        func missing() -> Promise<Product> {
            request(route: get(endpoint: "/products/9"),
                    options: RequestOptions(sampleData: .json(#"{"code": 404, "message": "no such product"}"#, status: 404)))
        }

        func unsampled() -> Promise<Void> { request(route: delete(endpoint: "/products/1")) }
    }

    /// Records the `Authorization` header of every request the plugins see.
    final class Watcher: Plugin, @unchecked Sendable {
        let sent = Recorder<String>()
        func observe(_ event: PluginEvent, api: APIContext) {
            guard case .willSend(let request) = event else { return }
            sent.append(request.value(forHTTPHeaderField: "Authorization") ?? "none")
        }
    }

    final class Signer: APIDelegate {
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer sample", forHTTPHeaderField: "Authorization")
        }
    }

    @Test func samplesAnswerThroughTheDelegatePluginsAndParserWithoutANetwork() async throws {
        let closed = try ClosedPort()
        let watcher = Watcher()
        let shop = SampleShop(baseURL: closed.baseURL, usesSampleData: true, plugins: [watcher])
        let signer = Signer()
        shop.delegate = signer
        #expect(try await shop.products().value == [Product(name: "tern", price: 3)])
        #expect(watcher.sent.items == ["Bearer sample"])
    }

    @Test func anErrorSampleIsValidatedAndItsBodyDecoded() async throws {
        let shop = SampleShop(baseURL: try ClosedPort().baseURL, usesSampleData: true)
        let error = await apiError(of: shop.missing())
        guard case .unacceptableStatus(let failure)? = error else {
            Issue.record("expected unacceptableStatus, got \(String(describing: error))")
            return
        }
        #expect(failure.statusCode == 404)
        #expect(failure.serverError(as: ShopError.self) == ShopError(code: 404, message: "no such product"))
    }

    @Test func aRequestWithoutSampleDataFailsNamingIt() async throws {
        let shop = SampleShop(baseURL: try ClosedPort().baseURL, usesSampleData: true)
        let error = await apiError(of: shop.unsampled())
        guard case .transportFailed(let failure)? = error, let missing = failure.underlying as? MissingSampleData else {
            Issue.record("expected MissingSampleData, got \(String(describing: error))")
            return
        }
        #expect(missing.method == "DELETE")
        #expect("\(missing)".contains("/products/1 has no sample data"))
    }

    @Test func withoutTheSwitchSamplesAreIgnored() async throws {
        let shop = SampleShop(baseURL: try TestServer.baseURL, usesSampleData: false)
        // The loopback server's products, not the sample's.
        #expect(try await shop.products().value.map(\.name) == ["tern", "gull"])
    }

    @Test func requestValuesAndFixtureFilesCarrySamplesToo() async throws {
        let fixture = FileManager.default.temporaryDirectory.appendingPathComponent("tern-sample-\(UUID()).json")
        try Data(#"[{"name": "gull", "price": 5}]"#.utf8).write(to: fixture)
        defer { try? FileManager.default.removeItem(at: fixture) }
        let shop = SampleShop(baseURL: try ClosedPort().baseURL, usesSampleData: true)
        let featured: APIRequest<[Product]> = APIRequest(.get("/featured")).sample(.file(fixture))
        #expect(try await shop.send(featured).value == [Product(name: "gull", price: 5)])
        // A paginator over a sample sees the same page twice, and stops there.
        let pages = Paginator(api: shop, request: featured)
        _ = try await pages.loadNextPage().value
        _ = try await pages.loadNextPage().value
        #expect(!pages.hasNextPage && pages.elements.count == 1)
    }
}
