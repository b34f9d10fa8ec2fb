import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct PluginTests {
    struct Append: RequestAdapter {
        let tag: String
        func adapt(_ request: inout URLRequest) throws {
            let trail = request.value(forHTTPHeaderField: "X-Trail").map { $0 + "," } ?? ""
            request.setValue(trail + tag, forHTTPHeaderField: "X-Trail")
        }
    }

    struct Refuse: RequestAdapter {
        func adapt(_ request: inout URLRequest) throws { throw TestError(code: 3) }
    }

    /// Records every hook, in order.
    final class Journal: Plugin, @unchecked Sendable {
        let entries = Recorder<String>()
        func observe(_ event: PluginEvent, api: APIContext) {
            switch event {
            case .willSend(let request): entries.append("willSend \(request.url!.path)")
            case .didReceive(.success(let response), _): entries.append("didReceive \(response.statusCode)")
            case .didReceive(.failure(let error), _): entries.append("didReceive \(error.caseName)")
            case .didEndStream(let response, let error): entries.append("didEndStream \(response.statusCode) \(error?.caseName ?? "complete")")
            case .didRetry(_, let retry, _): entries.append("didRetry \(retry)")
            case .didRefresh: entries.append("didRefresh")
            case .didFail(let error, _): entries.append("didFail \(error.caseName)")
            }
        }
    }

    @Test func adaptersRunInTheOrderGiven() async throws {
        let api = try TestAPI(configuration: APIConfiguration(adapters: [Append(tag: "a"), CompositeAdapter([Append(tag: "b"), Append(tag: "c")]), Append(tag: "d")]))
        #expect(try await api.echo(.get).header("X-Trail") == "a,b,c,d")
    }

    @Test func anAdaptersErrorStopsTheRequestNamingIt() async throws {
        let api = try TestAPI(configuration: APIConfiguration(adapters: [Append(tag: "a"), Refuse()]))
        let error = await apiError(of: api.request(route: api.get(endpoint: "/echo")) as Promise<Data>)
        guard case .invalidRequest(let failure)? = error else {
            Issue.record("expected invalidRequest, got \(String(describing: error))")
            return
        }
        #expect(failure.description.contains("the adapter Refuse stopped the request"))
    }

    @Test func hooksFireInOrderThroughARetryAndAFailure() async throws {
        let journal = Journal()
        let requestJournal = Journal()
        let clock = TestClock()
        let api = try TestAPI(configuration: APIConfiguration(timeout: .infinity, retryPolicy: RetryPolicy(maxRetries: 1), plugins: [journal]), clock: clock)
        let promise: Promise<Data> = api.request(route: api.get(endpoint: "/status/503"), options: RequestOptions(plugins: [requestJournal]))
        #expect(await clock.waitForScheduled(1))
        clock.advance(by: 60)
        _ = await promise.result
        let expected = ["willSend /status/503", "didReceive 503", "didRetry 1", "willSend /status/503", "didReceive 503", "didFail unacceptableStatus"]
        #expect(journal.entries.items == expected)
        #expect(requestJournal.entries.items == expected)
    }

    /// Records the configuration each hook was told of.
    final class Environments: Plugin, Sendable {
        let names = Recorder<String>()
        func observe(_ event: PluginEvent, api: APIContext) {
            switch event {
            case .willSend: names.append("willSend \(api.configuration.name)")
            case .didReceive: names.append("didReceive \(api.configuration.name) \(api.configuration.baseURL ?? "-")")
            default: break
            }
        }
    }

    @Test func hooksAreToldTheAPIsConfigurationAsAValue() async throws {
        let environments = Environments()
        let base = try TestServer.baseURL
        let client = APIClient(configuration: APIConfiguration(name: "staging", baseURL: base, retryPolicy: .never, plugins: [environments]),
                               transport: TestTransport.make(), responseQueue: .global())
        let _: Data = try await client.request(route: .get("/echo")).value
        #expect(environments.names.items == ["willSend staging", "didReceive staging \(base)"])
    }

    @Test func everyAttemptEndsWithOneDidReceiveEvenWhenCancelled() async throws {
        let server = try LoopbackServer { _ in ServerResponse().with(.stall(20)) }
        defer { server.stop() }
        let journal = Journal()
        let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(plugins: [journal]))
        let promise: Promise<Data> = api.request(route: api.get(endpoint: "/slow"))
        #expect(await eventually { journal.entries.items.count == 1 })
        promise.cancel()
        _ = await promise.result
        #expect(journal.entries.items == ["willSend /slow", "didReceive cancelled", "didFail cancelled"])
    }

    @Test func theRefreshIsReported() async throws {
        let server = try AuthServer()
        let journal = Journal()
        let api = AuthAPI(server, configuration: APIConfiguration(retryPolicy: .never, plugins: [journal]))
        let store = SessionStore(server)
        api.delegate = store
        _ = try await api.secure().value
        #expect(journal.entries.items.contains("didRefresh"))
        withExtendedLifetime(store) {}
    }

    /// One refresh for two APIs that share a delegate, each with a request refused for it: each
    /// API's plugins hear it once; a third API sharing the delegate, which asked nothing, hears
    /// nothing.
    @Test func aSharedRefreshIsReportedToEachAPIThatAskedForIt() async throws {
        let server = try AuthServer()
        let gate = DispatchSemaphore(value: 0)
        server.script(.waitThenIssue(gate))
        let journals = (Journal(), Journal(), Journal())
        let store = SessionStore(server)
        let apis = [journals.0, journals.1, journals.2].map { journal in
            AuthAPI(server, configuration: APIConfiguration(retryPolicy: .never, plugins: [journal]))
        }
        apis.forEach { $0.delegate = store }
        // Sent with the old token, refused 2 s later, while the other API's refresh runs: it
        // joins that refresh.
        let late = apis[1].request(route: apis[1].get(endpoint: "/slow")) as Promise<OK>
        #expect(await eventually { server.tokens.count == 1 })
        let first = apis[0].secure(1)
        #expect(await eventually { server.refreshCount == 1 })
        #expect(await eventually { apis[0].signer?.refresher.askingAPIs == 2 })
        gate.signal()
        _ = try await first.value
        _ = try await late.value
        #expect(journals.0.entries.items.filter { $0 == "didRefresh" }.count == 1)
        #expect(journals.1.entries.items.filter { $0 == "didRefresh" }.count == 1, "\(journals.1.entries.items)")
        #expect(!journals.2.entries.items.contains("didRefresh"))
        #expect(server.refreshCount == 1)
    }

    @Test func theNetworkActivityCounterGoesUpAndBackToZero() async throws {
        let peak = Counter()
        let activity = NetworkActivity { count in _ = peak.add(count > peak.value ? count - peak.value : 0) }
        let api = try TestAPI(configuration: APIConfiguration(retryPolicy: .never, plugins: [activity]))
        let promises: [Promise<Data>] = (0..<20).map { _ in api.request(route: api.get(endpoint: "/delay/50")) }
        for promise in promises { _ = try await promise.value }
        #expect(peak.value >= 1)
        #expect(activity.inFlight == 0)
    }

    /// A stream is in flight until its body ends, not only until its head came: a spinner
    /// stopped while a download or a chat's answer still streamed.
    @Test func theNetworkActivityCountsAStreamUntilItsEnd() async throws {
        let clock = TestClock()
        let stubs = StubTransport(clock: clock)
        stubs.add(Stub(.get, "/ticks", answers: .streamed([(after: 0, "first\n"), (after: 1, "last\n")])))
        let activity = NetworkActivity()
        let api = try TestAPI(baseURL: "https://stream.invalid", configuration: APIConfiguration(timeout: .infinity, retryPolicy: .never, plugins: [activity]),
                              transport: stubs, clock: clock)
        var lines = api.stream(route: api.get(endpoint: "/ticks")).lines.makeAsyncIterator()
        #expect(try await lines.next() == "first")
        #expect(activity.inFlight == 1, "the stream's head has come, its body has not ended")
        #expect(await clock.advanceToNextDelivery())
        #expect(try await lines.next() == "last")
        #expect(try await lines.next() == nil)
        #expect(await eventually { activity.inFlight == 0 })
    }

    @Test func theLoggerRedactsSecrets() async throws {
        let lines = Recorder<String>()
        let logger = LoggerPlugin(level: .verbose, redactingHeaders: ["X-Api-Key"], redactingQueryKeys: ["token"], includesCURL: true) { lines.append($0) }
        let api = try TestAPI(configuration: APIConfiguration(commonHeaders: ["Authorization": "Bearer s3cret", "Cookie": "id=s3cret", "X-Api-Key": "s3cret", "X-Visible": "shown"], retryPolicy: .never, plugins: [logger]))
        // A route that does not echo the request back: response bodies are the server's own data.
        let products: [Product] = try await api.request(route: api.post(endpoint: "/products?token=s3cret&page=2"), parameters: JSONParameters(["name": "tern"])).value
        #expect(products.count == 2)
        let log = lines.items.joined(separator: "\n")
        #expect(!log.contains("s3cret"))
        #expect(log.contains("Authorization: <redacted>"))
        #expect(log.contains("X-Api-Key: <redacted>"))
        #expect(log.contains("X-Visible: shown"))
        #expect(log.contains("token=<redacted>&page=2"))
        #expect(log.contains("page=2"))
        #expect(log.contains("curl -X POST"))
        #expect(log.contains(#"{"name":"tern"}"#))
        #expect(log.contains("← 200 POST"))
    }

    /// A header the API keeps at its origin is named once: the logger redacts it too.
    @Test func theLoggerRedactsTheHeadersARedirectDropsAtTheOrigin() async throws {
        let lines = Recorder<String>()
        let logger = LoggerPlugin(level: .verbose, includesCURL: true) { lines.append($0) }
        let api = try TestAPI(configuration: APIConfiguration(commonHeaders: ["X-Api-Key": "s3cret", "X-Visible": "shown"], retryPolicy: .never,
                                                              redirectPolicy: RedirectPolicy(sensitiveHeaders: ["x-api-KEY"]), plugins: [logger]))
        let products: [Product] = try await api.request(route: api.get(endpoint: "/products")).value
        #expect(products.count == 2)
        let log = lines.items.joined(separator: "\n")
        #expect(!log.contains("s3cret"))
        #expect(log.contains("X-Api-Key: <redacted>"))
        #expect(log.contains("X-Visible: shown"))
        #expect(log.contains("curl -X GET"))
    }

    /// User-info used to be printed (also in the cURL line), and `token%5B%5D=` and `Token=`
    /// slipped past a redacted `token`.
    @Test func theLoggerRedactsUserInfoAndQueryKeysHoweverWritten() async throws {
        let lines = Recorder<String>()
        let logger = LoggerPlugin(level: .verbose, redactingQueryKeys: ["Token"], includesCURL: true) { lines.append($0) }
        let api = try TestAPI(configuration: APIConfiguration(retryPolicy: .never, plugins: [logger]))
        let base = try TestServer.baseURL.replacingOccurrences(of: "://", with: "://alice:PASSWORD@")
        let query = "TOKEN=s3cret1&token%5B%5D=s3cret2&auth%5Btoken%5D=s3cret3&t%6Fken=s3cret4&page=2"
        _ = await (api.request(route: .get(base + "/products?" + query)) as Promise<[Product]>).result
        // A failure names the URL in its error text too.
        _ = await (api.request(route: .get(base + "/status/500?" + query)) as Promise<[Product]>).result
        let log = lines.items.joined(separator: "\n")
        for secret in ["PASSWORD", "alice", "s3cret1", "s3cret2", "s3cret3", "s3cret4"] {
            #expect(!log.contains(secret), "\(secret) was logged")
        }
        #expect(log.contains("://<redacted>@127.0.0.1"))
        #expect(log.contains("TOKEN=<redacted>&token%5B%5D=<redacted>&auth%5Btoken%5D=<redacted>&t%6Fken=<redacted>&page=2"))
        #expect(log.contains("curl -X GET"))
        #expect(log.contains("← 500 GET"))
    }

    /// A failed request's line named the method and URL twice: its own, then the error's.
    @Test func theLoggerNamesAFailedRequestOnce() async throws {
        let lines = Recorder<String>()
        let logger = LoggerPlugin(level: .response) { lines.append($0) }
        let closed = try ClosedPort()
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never, plugins: [logger]), transport: TestTransport.make(), responseQueue: .global())
        _ = await (api.request(route: .get(closed.baseURL + "/orders")) as Promise<[Product]>).result
        let failed = lines.items.filter { $0.hasPrefix("← ") }
        #expect(failed.count == 1, "\(lines.items)")
        #expect(failed.first?.hasPrefix("← GET \(closed.baseURL)/orders failed") == true, "\(failed)")
        #expect(failed.first?.components(separatedBy: "/orders").count == 2, "\(failed)")
    }

    /// A download's body goes to its file, not the response: it was logged as "0 B".
    @Test func theLoggerSaysHowMuchADownloadReceived() async throws {
        let server = try LoopbackServer { _ in ServerResponse(status: 200, headers: ["Content-Type": "application/octet-stream"], body: Data(count: 3_000)) }
        defer { server.stop() }
        let lines = Recorder<String>()
        let logger = LoggerPlugin(level: .response) { lines.append($0) }
        let api = AbstractAPI(configuration: APIConfiguration(baseURL: server.baseURL, plugins: [logger]), transport: TestTransport.make(),
                              responseQueue: .global())
        let destination = FileManager.default.temporaryDirectory.appendingPathComponent("tern-logged-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: destination) }
        _ = try await api.download(route: .get("/report.bin"), to: destination).value
        #expect(lines.items.contains { $0.hasPrefix("← 200 GET ") && $0.contains(", 2.9 KB in its file") }, "\(lines.items)")
    }

    /// A binary body was printed as it came, NULs and a terminal's escapes included.
    @Test func theLoggerNamesABinaryBodyInsteadOfPrintingIt() async throws {
        let binary = Data([0x89, 0x50, 0x4E, 0x47, 0x00, 0x1B, 0x5B, 0x32, 0x4A] + Array(repeating: 0x41, count: 2_000))
        let server = try LoopbackServer { _ in ServerResponse(status: 200, headers: ["Content-Type": "image/png"], body: binary) }
        defer { server.stop() }
        let lines = Recorder<String>()
        let logger = LoggerPlugin(level: .verbose, includesCURL: true) { lines.append($0) }
        let api = AbstractAPI(configuration: APIConfiguration(baseURL: server.baseURL, plugins: [logger]), transport: TestTransport.make(),
                              responseQueue: .global())
        let echoed: Data = try await api.request(route: .post("/avatar"), parameters: BodyParameters(binary, contentType: "image/png")).value
        #expect(echoed == binary)
        let log = lines.items.joined(separator: "\n")
        #expect(!log.contains("\u{0}") && !log.contains("\u{1B}"), "\(log)")
        #expect(log.components(separatedBy: "<2.0 KB of binary data>").count == 4, "\(log)")   // the request's body, its cURL line, the response's
    }

    @Test func theLogLevelLimitsWhatIsPrinted() async throws {
        let lines = Recorder<String>()
        let logger = LoggerPlugin(level: .request) { lines.append($0) }
        let api = try TestAPI(configuration: APIConfiguration(retryPolicy: .never, plugins: [logger]))
        _ = try await api.echo(.get)
        #expect(lines.items.count == 1)
        #expect(lines.items.first?.hasPrefix("→ GET ") == true)
    }
}
