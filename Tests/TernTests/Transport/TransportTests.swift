import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the pipeline makes of what a transport reports, and the URLSession transport's options.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct TransportTests {
    /// A transport that reports one fixed outcome and records the requests it was given.
    struct ScriptedTransport: WholeResponseTransport {
        let outcome: @Sendable (TransportRequest) -> Result<TransportResponse, any Error>
        let seen = Recorder<URLRequest>()

        func send(_ request: TransportRequest, completion: @escaping @Sendable (Result<TransportResponse, any Error>) -> Void) -> any TransportTask {
            seen.append(request.urlRequest)
            DispatchQueue.global().async { completion(outcome(request)) }
            return NoTask()
        }
    }

    @Test func aCancelledURLErrorFromAnyTransportIsTernsCancellation() async throws {
        let transport = ScriptedTransport { _ in .failure(URLError(.cancelled)) }
        let api = try TestAPI(baseURL: "https://example.invalid", transport: transport)
        #expect(await apiError(of: api.request(route: api.get(endpoint: "/x")) as Promise<Void>)?.caseName == "cancelled")
    }

    @Test func anyOtherTransportErrorIsKeptInside() async throws {
        let transport = ScriptedTransport { _ in .failure(TestError(code: 9)) }
        let api = try TestAPI(baseURL: "https://example.invalid", transport: transport)
        let error = await apiError(of: api.request(route: api.get(endpoint: "/x")) as Promise<Void>)
        guard case .transportFailed(let failure)? = error else {
            Issue.record("expected transportFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.underlying as? TestError == TestError(code: 9))
        #expect(failure.urlError == nil)
    }

    @Test func theCachePolicyComesFromTheOptionsOrTheConfiguration() async throws {
        let transport = ScriptedTransport { request in
            .success(TransportResponse(httpResponse: HTTPURLResponse(url: request.urlRequest.url!, statusCode: 204, httpVersion: nil, headerFields: nil)!, body: Data()))
        }
        let api = try TestAPI(baseURL: "https://example.invalid",
                              configuration: APIConfiguration(cachePolicy: .returnCacheDataElseLoad), transport: transport)
        try await (api.request(route: api.get(endpoint: "/a")) as Promise<Void>).value
        try await (api.request(route: api.get(endpoint: "/b"), options: RequestOptions(cachePolicy: .reloadIgnoringLocalCacheData)) as Promise<Void>).value
        #expect(transport.seen.items.map(\.cachePolicy) == [.returnCacheDataElseLoad, .reloadIgnoringLocalCacheData])
    }

    @Test func aSessionOfTheCallersIsUsedAsItIs() async throws {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpAdditionalHeaders = ["X-Session": "mine"]
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let api = try TestAPI(transport: URLSessionTransport(session: session))
        let echo = try await api.echo(.get)
        #expect(echo.header("X-Session") == "mine")
    }

    /// A caller's session sends file bodies the same way as Tern's own (on Linux, never with
    /// `uploadTask(fromFile:)`, which crashes FoundationNetworking when cancelled).
    @Test func aCallersSessionSendsAFileBodyWhole() async throws {
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let api = try TestAPI(transport: URLSessionTransport(session: session))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-test-\(UUID().uuidString).bin")
        let contents = patterned(bytes: 100_000, seed: 13)
        try contents.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let echo: MultipartEcho = try await api.request(route: api.post(endpoint: "/multipart"),
                                                        parameters: MultipartParameters(parts: [Part(name: "file", fileURL: file)])).value
        #expect(echo.parts.first?.size == contents.count)
        #expect(echo.parts.first?.checksum == fnv1a(contents))
        #expect(echo.contentLength == String(echo.bodySize))
    }

    @Test func aLargeBodyArrivesIntact() async throws {
        let api = try TestAPI()
        // Many chunks, yet little work for the hash: under the thread sanitizer, hashing 4 MiB in
        // a debug build kept both cooperative threads busy for seconds and starved other tests.
        let size = 1 << 20
        let body: Data = try await api.request(route: api.get(endpoint: "/huge?bytes=\(size)")).value
        #expect(body.count == size)
        #expect(body == patterned(bytes: size))
    }
}
