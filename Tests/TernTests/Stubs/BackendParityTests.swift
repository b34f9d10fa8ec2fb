import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a request sees must not depend on whether a real server or the stub transport answers
/// it: a representative part of the pipeline's tests, run against both, with one handler
/// serving each.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct BackendParityTests {
    enum Backend: String, CaseIterable, Sendable {
        case loopback, stubs
    }

    /// An API whose requests `handler` answers, through a loopback server or a stub transport.
    final class Served: Sendable {
        let api: TestAPI
        private let server: LoopbackServer?

        init(_ backend: Backend, configuration: APIConfiguration = APIConfiguration(retryPolicy: .never),
             plugins: [any Plugin] = [], handler: @escaping @Sendable (RecordedRequest) -> ServerResponse = TestServer.route) throws {
            var configuration = configuration
            configuration.plugins = plugins
            switch backend {
            case .loopback:
                let server = try LoopbackServer(handler: handler)
                self.server = server
                api = try TestAPI(baseURL: server.baseURL, configuration: configuration)
            case .stubs:
                let stubs = StubTransport()
                stubs.add(Stub(nil, "/**") { StubAnswer(handler($0)) })
                server = nil
                api = try TestAPI(baseURL: "http://127.0.0.1:9", configuration: configuration, transport: stubs)
            }
        }

        deinit { server?.stop() }
    }

    @Test(arguments: Backend.allCases)
    func encodersSendWhatTheyPromise(backend: Backend) async throws {
        let served = try Served(backend)
        defer { withExtendedLifetime(served) {} }   // the server lives to the end
        let api = served.api
        let json = try await api.echo(.post, JSONParameters(["name": "tern"]))
        #expect(String(decoding: json.body, as: UTF8.self) == #"{"name":"tern"}"#)
        #expect(json.header("Content-Type") == "application/json")
        let form = try await api.echo(.post, FormParameters(["q": "a b&c"]))
        #expect(String(decoding: form.body, as: UTF8.self) == "q=a%20b%26c")
        let query = try await api.echo(.get, URLParameters(["tags": ["x", "y"]]))
        #expect(query.query == "tags%5B%5D=x&tags%5B%5D=y")
    }

    @Test(arguments: Backend.allCases)
    func aMultipartFilePartArrivesIntact(backend: Backend) async throws {
        let served = try Served(backend)
        defer { withExtendedLifetime(served) {} }   // the server lives to the end
        let api = served.api
        let contents = patterned(bytes: 200_000, seed: 11)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-parity-\(UUID().uuidString).bin")
        try contents.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let echo: MultipartEcho = try await api.request(route: api.post(endpoint: "/multipart"),
                                                        parameters: MultipartParameters(parts: [Part(name: "file", fileURL: file), Part(name: "note", value: "hi")])).value
        #expect(echo.parts.map(\.name) == ["file", "note"])
        #expect(echo.parts[0].checksum == fnv1a(contents))
        #expect(echo.parts[1].text == "hi")
    }

    @Test(arguments: Backend.allCases)
    func aRetriedStatusSucceedsOnTheNextAnswer(backend: Backend) async throws {
        let calls = Recorder<Int>()
        let served = try Served(backend, configuration: APIConfiguration(retryPolicy: RetryPolicy(baseDelay: 0.001, jitter: false))) { _ in
            calls.append(1)
            return calls.items.count == 1 ? .json(#"{"code": 503, "message": "busy"}"#, status: 503) : .json(#"[]"#)
        }
        let products: [Product] = try await served.api.request(route: served.api.get(endpoint: "/products")).value
        #expect(products.isEmpty)
        #expect(calls.items.count == 2)
    }

    @Test(arguments: Backend.allCases)
    func anUnacceptableStatusCarriesTheServersError(backend: Backend) async throws {
        let served = try Served(backend)
        defer { withExtendedLifetime(served) {} }   // the server lives to the end
        let api = served.api
        let error = await apiError(of: api.request(route: api.get(endpoint: "/status/404")) as Promise<Data>)
        guard case .unacceptableStatus(let failure)? = error else {
            Issue.record("expected unacceptableStatus, got \(String(describing: error))")
            return
        }
        #expect(failure.statusCode == 404)
        #expect(failure.serverError as? ShopError == ShopError(code: 404, message: "status 404"))
    }

    @Test(arguments: Backend.allCases)
    func pluginsHearEachStep(backend: Backend) async throws {
        let journal = PluginTests.Journal()
        let served = try Served(backend, plugins: [journal])
        defer { withExtendedLifetime(served) {} }   // the server lives to the end
        let api = served.api
        _ = try await (api.request(route: api.get(endpoint: "/products")) as Promise<[Product]>).value
        _ = await apiError(of: api.request(route: api.get(endpoint: "/status/500")) as Promise<Data>)
        #expect(journal.entries.items == ["willSend /products", "didReceive 200", "willSend /status/500", "didReceive 500", "didFail unacceptableStatus"])
    }

    @Test(arguments: Backend.allCases)
    func a307KeepsTheMethodAndBody(backend: Backend) async throws {
        let served = try Served(backend)
        defer { withExtendedLifetime(served) {} }   // the server lives to the end
        let api = served.api
        let echo: Echo = try await api.request(route: api.put(endpoint: "/redirect/307?to=/echo"), parameters: JSONParameters(["n": 1])).value
        #expect(echo.method == "PUT")
        #expect(echo.path == "/echo")
        #expect(String(decoding: echo.body, as: UTF8.self) == #"{"n":1}"#)
    }

    @Test(arguments: Backend.allCases)
    func aDownloadReportsItsProgressToTheEnd(backend: Backend) async throws {
        let served = try Served(backend)
        defer { withExtendedLifetime(served) {} }   // the server lives to the end
        let api = served.api
        let seen = Recorder<TransferProgress>()
        let body: Data = try await api.request(route: api.get(endpoint: "/huge?bytes=300000")).onProgress { seen.append($0) }.value
        #expect(body == patterned(bytes: 300_000))
        #expect(await eventually { seen.items.last?.completedBytes == 300_000 })
        #expect(seen.items.last?.totalBytes == 300_000)
    }

    /// Refuses every request but those signed with the newest token, which `/token` issues.
    final class Tokens: APIDelegate {
        let base: String
        let current = Recorder<String>()
        init(base: String) { self.base = base }
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer \(current.items.last ?? "expired")", forHTTPHeaderField: "Authorization")
        }
        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            (api.request(route: .post(base + "/token"), options: RequestOptions(authenticates: false)) as Promise<String>)
                .map { self.current.append($0) }
        }
    }

    @Test(arguments: Backend.allCases)
    func aRefusedRequestIsRefreshedAndReplayedOnce(backend: Backend) async throws {
        let served = try Served(backend) { request in
            if request.path == "/token" { return .text("fresh") }
            return request.headers["Authorization"] == "Bearer fresh" ? .json(#"{"ok": true}"#) : .json(#"{"code": 401, "message": "expired"}"#, status: 401)
        }
        let tokens = Tokens(base: served.api.baseURL)
        served.api.delegate = tokens
        let body: String = try await served.api.request(route: served.api.get(endpoint: "/secure")).value
        #expect(body == #"{"ok": true}"#)
        #expect(tokens.current.items == ["fresh"])
    }
}

extension BackendParityTests {
    /// A `HEAD` answered by a handler that gives every request its body (as a server's `GET`
    /// handler does): no body reaches the app, and the length stated is the body's, from a real
    /// server and from stubs alike. Before, the stub handed the `HEAD` the whole body.
    @Test(arguments: Backend.allCases)
    func aHeadGetsTheLengthOfTheBodyAndNotTheBody(backend: Backend) async throws {
        let body = #"{"name": "tern", "price": 3}"#
        let served = try Served(backend) { _ in .json(body) }
        defer { withExtendedLifetime(served) {} }   // the server lives to the end
        let head: Response = try await served.api.request(route: .head("/products/1")).value
        #expect(head.statusCode == 200 && head.body.isEmpty, "\(String(decoding: head.body, as: UTF8.self))")
        #expect(head.headers["Content-Length"] == String(body.utf8.count))
    }

    /// A loopback server's answer takes headers as a stub's does (`.json(_:headers:)`, `.text`),
    /// and they arrive, its `Content-Type` kept unless they name their own.
    @Test(arguments: Backend.allCases)
    func anAnswersHeadersArriveFromEitherBackend(backend: Backend) async throws {
        let served = try Served(backend) { request in
            request.path.hasSuffix("/json") ? .json(#"{"name": "tern", "price": 3}"#, headers: ["Cache-Control": "max-age=60", "ETag": "\"v1\""])
                : .text("tern", headers: ["Content-Type": "text/markdown"])
        }
        defer { withExtendedLifetime(served) {} }
        let json: Response = try await served.api.request(route: .get("/products/json")).value
        #expect(json.headers["Cache-Control"] == "max-age=60" && json.headers["ETag"] == "\"v1\"")
        #expect(json.headers["Content-Type"] == "application/json")
        let text: Response = try await served.api.request(route: .get("/products/text")).value
        #expect(text.headers["Content-Type"] == "text/markdown" && String(decoding: text.body, as: UTF8.self) == "tern")
    }
}
