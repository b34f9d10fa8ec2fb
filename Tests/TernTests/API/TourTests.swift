import Foundation
import Testing
import Tern
import TernTesting
@testable import TernSnippets

@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct TourTests {
    @Test func theStubbedShopAnswersFromItsStub() async throws {
        #expect(try await Tour.stubbed().map(\.name) == ["tern"])
    }

    /// `StubTransport`'s own example, run: its pattern is matched against the whole path, the
    /// base URL's included.
    @Test func theStubTransportsExampleAnswers() async throws {
        #expect(try await SymbolSnippets.TestingDocs.stubTransport().map(\.name) == ["tern"])
    }

    @Test func theCannedTransportAnswers() async throws {
        #expect(try await Tour.transports().isEmpty)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
    @Test func theTokenStoreSignsAndRefreshesAgainstATokenServer() async throws {
        // The documents' store, with a loopback token server in place of shop.example.
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
        // A queue nobody services, as a server's main queue is while its main thread waits: the
        // refresh must not need it.
        let unserviced = DispatchQueue(label: "tern.tests.unserviced")
        unserviced.suspend()
        defer { unserviced.resume() }
        let shop = Tour.ShopAPI(client: APIClient(configuration: APIConfiguration(baseURL: server.baseURL), responseQueue: unserviced))
        let tokens = Tour.authentication(shop: shop)
        let store = TokenStore(Tokens(access: "a-1", refresh: "r-1"), tokenURL: server.baseURL + "/oauth/token")
        shop.client.delegate = store
        #expect(try await shop.products(page: 1).value.isEmpty)
        #expect(store.current.access == "a-2")
        withExtendedLifetime((store, tokens)) {}
    }

    /// The article's box for systems without `Mutex`: what one task writes under its lock,
    /// every other reads whole (a thousand writers and readers at once, under TSan in CI).
    @Test func theTokenBoxKeepsItsTokensWhole() async {
        let box = TokenBox(Tokens(access: "a-0", refresh: "r-0"))
        await withTaskGroup(of: Void.self) { group in
            for index in 1...1000 {
                group.addTask {
                    box.withLock { $0 = Tokens(access: "a-\(index)", refresh: "r-\(index)") }
                    let read = box.withLock { $0 }
                    #expect(read.access.dropFirst(2) == read.refresh.dropFirst(2))
                }
            }
        }
        #expect(box.withLock { $0.access } != "a-0")
    }

    @Test func theTestingSnippetRuns() async throws {
        let (products, unreachable) = try await Tour.testing()
        #expect(products.map(\.name) == ["tern"])
        guard case .failure(APIError.transportFailed(let failure)) = unreachable else {
            Issue.record("expected transportFailed, got \(unreachable)")
            return
        }
        #expect(failure.urlError?.code == .cannotConnectToHost)
    }
}
