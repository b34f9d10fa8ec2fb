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

    /// The article's flow against a loopback shop: logging in goes unsigned and hands its tokens to
    /// the store; a refused request refreshes them once and goes again signed; with the delegate
    /// gone, requests go unsigned.
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
    @Test func theTokenStoreLogsInSignsAndRefreshesAgainstATokenServer() async throws {
        let signatures = Recorder<String>()
        let server = try LoopbackServer { request in
            let form = String(decoding: request.body, as: UTF8.self)
            signatures.append("\(request.path) \(request.headers["Authorization"] ?? "unsigned")")
            switch request.path {
            case "/login":
                return form == "password=s3cret&user=ada" || form == "user=ada&password=s3cret"
                    ? .json(#"{"access_token": "a-1", "refresh_token": "r-1"}"#) : ServerResponse(status: 401)
            case "/oauth/token":
                return form.contains("refresh_token=r-1") ? .json(#"{"access_token": "a-2", "refresh_token": "r-2"}"#) : ServerResponse(status: 400)
            default:
                let signature = request.headers["Authorization"]
                return signature == nil || signature == "Bearer a-2" ? .json(#"[]"#) : ServerResponse(status: 401)
            }
        }
        defer { server.stop() }
        // A queue nobody services, as a server's main queue is while its main thread waits: the
        // refresh must not need it.
        let unserviced = DispatchQueue(label: "tern.tests.unserviced")
        unserviced.suspend()
        defer { unserviced.resume() }
        let shop = Tour.ShopAPI(client: APIClient(configuration: APIConfiguration(baseURL: server.baseURL), responseQueue: unserviced))
        let loggedIn = try await Tour.authentication(shop: shop)
        #expect(loggedIn.current.access == "a-1" && shop.client.delegate === loggedIn)
        // The article's store refreshes at shop.example; this one at the loopback shop.
        let store = TokenStore(loggedIn.current, tokenURL: server.baseURL + "/oauth/token")
        shop.client.delegate = store
        #expect(try await shop.products(page: 1).value.isEmpty)
        #expect(store.current.access == "a-2")
        shop.client.delegate = nil
        #expect(try await shop.products(page: 1).value.isEmpty)
        #expect(signatures.items == [
            "/login unsigned", "/products Bearer a-1", "/oauth/token unsigned", "/products Bearer a-2", "/products unsigned",
        ])
    }

    /// The article's `Tokens` reads OAuth's names, so a recording of the log-in keeps neither
    /// token (a trial of the docs found both in the file when the fields were `access`, `refresh`).
    @Test func aRecordedLogInKeepsNeitherToken() async throws {
        let server = try LoopbackServer { _ in .json(#"{"access_token": "a-secret-1", "refresh_token": "r-secret-1"}"#) }
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-tour-\(UUID().uuidString).har")
        defer { try? FileManager.default.removeItem(at: file) }
        let tape = try RecordingTransport(file: file, mode: .record)
        let shop = Tour.ShopAPI(client: APIClient(configuration: APIConfiguration(baseURL: server.baseURL), transport: tape, responseQueue: .global()))
        let tokens = try await shop.logIn(user: "ada", password: "s3cret").value
        #expect(tokens.access == "a-secret-1" && tokens.refresh == "r-secret-1")
        let written = try String(contentsOf: file, encoding: .utf8)
        #expect(!written.contains("a-secret-1") && !written.contains("r-secret-1") && !written.contains("s3cret"), "\(written)")
        #expect(written.contains("/login"))
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
