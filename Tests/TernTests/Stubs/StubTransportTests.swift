import Foundation
import Testing
import Tern
import TernTesting

/// The stub transport under the real pipeline: matching, answers in turn, delays on the test
/// clock, chunks, failures, recording, and the error for a request no stub matches.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct StubTransportTests {
    static let base = "https://shop.example"

    func api(_ stubs: StubTransport, configuration: APIConfiguration = APIConfiguration(retryPolicy: .never),
             clock: (any APIClock)? = nil) throws -> TestAPI {
        try TestAPI(baseURL: Self.base, configuration: configuration, transport: stubs, clock: clock)
    }

    @Test func aStubAnswersThroughThePipelineAndTheRequestIsRecorded() async throws {
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/products", query: ["page": "2"], answers: .json(#"[{"name": "tern", "price": 3}]"#)))
        let api = try api(stubs)
        let products: [Product] = try await api.request(route: api.get(endpoint: "/products"), parameters: URLParameters(["page": 2])).value
        #expect(products == [Product(name: "tern", price: 3)])
        let request = try #require(stubs.requests.first)
        #expect(request.method == "GET")
        #expect(request.target == "/products?page=2")
        #expect(request.headers["Accept"] == "application/json")
    }

    /// `.json` and `.text` take headers besides their `Content-Type`, which they may replace.
    @Test func jsonAndTextAnswersTakeHeaders() async throws {
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/products", answers: .json("[]", headers: ["Link": "</products?page=2>; rel=\"next\"", "ETag": "\"1\""])))
        stubs.add(Stub(.get, "/notes", answers: try .json(["a"], headers: ["Content-Type": "application/vnd.notes+json"])))
        stubs.add(Stub(.get, "/readme", answers: .text("hi", headers: ["ETag": "\"2\""])))
        let api = try api(stubs)
        let products: Response = try await api.request(route: api.get(endpoint: "/products")).value
        #expect(products.headers["ETag"] == "\"1\"" && products.headers["Content-Type"] == "application/json")
        #expect(products.link(rel: "next")?.absoluteString.hasSuffix("/products?page=2") == true)
        let notes: Response = try await api.request(route: api.get(endpoint: "/notes")).value
        #expect(notes.headers["Content-Type"] == "application/vnd.notes+json")
        let readme: Response = try await api.request(route: api.get(endpoint: "/readme")).value
        #expect(readme.headers["ETag"] == "\"2\"" && readme.headers["Content-Type"] == "text/plain; charset=utf-8")
    }

    @Test func answersComeInTurnAndTheLastRepeats() async throws {
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/flaky", answers: .status(503), .json(#"{"ok": 1}"#)))
        let api = try api(stubs, configuration: APIConfiguration(retryPolicy: RetryPolicy(baseDelay: 0.001, jitter: false)))
        let first: Data = try await api.request(route: api.get(endpoint: "/flaky")).value
        let second: Data = try await api.request(route: api.get(endpoint: "/flaky")).value
        #expect(String(decoding: first, as: UTF8.self) == #"{"ok": 1}"#)
        #expect(first == second)
        #expect(stubs.requests.count == 3, "503, then the retry, then the second request")
    }

    @Test func aRequestNoStubMatchesFailsNamingEveryStubAndWhy() async throws {
        let stubs = StubTransport()
        stubs.add(Stub(.post, "/products", answers: .status(201)))
        stubs.add(Stub(.get, "/orders/*", answers: .json("[]")))
        stubs.add(Stub(.get, "/products", query: ["page": "1"], answers: .json("[]")))
        stubs.add(Stub(.get, "/products", headers: ["X-Shop": "north"], answers: .json("[]")))
        let api = try api(stubs)
        let error = await apiError(of: api.request(route: api.get(endpoint: "/products"), parameters: URLParameters(["page": 2])) as Promise<Data>)
        guard case .transportFailed(let failure)? = error, let unmatched = failure.underlying as? UnmatchedRequest else {
            Issue.record("expected an unmatched request, got \(String(describing: error))")
            return
        }
        #expect(unmatched.request.target == "/products?page=2")
        #expect(unmatched.mismatches.map(\.reason) == [
            "header X-Shop is missing",
            "query page is 2, not 1",
            "path /products does not match /orders/*",
            "method is GET, not POST",
        ])
        #expect(failure.description.contains("No stub matches GET /products?page=2"))
        #expect(failure.description.contains("4. POST /products: method is GET, not POST"))
    }

    @Test(arguments: [
        ("/files/*", "/files/a", true), ("/files/*", "/files/a/b", false), ("/files/**", "/files/a/b", true),
        ("/files/*/raw", "/files/a/raw", true), ("/files", "/files/a", false), ("/", "/", true),
    ])
    func pathPatternsMatchSegmentBySegment(pattern: String, path: String, matches: Bool) async throws {
        let stubs = StubTransport()
        stubs.add(Stub(.get, pattern, answers: .text("hit")))
        let api = try api(stubs)
        let result = await (api.request(route: api.get(endpoint: path)) as Promise<String>).result
        #expect((try? result.get()) == (matches ? "hit" : nil))
    }

    @Test func aDelayedAnswerWaitsForTheTestClock() async throws {
        let clock = TestClock()
        let stubs = StubTransport(clock: clock)
        stubs.add(Stub(.get, "/slow", answers: StubAnswer.text("late").delayed(by: 30)))
        let api = try api(stubs, clock: clock)
        let promise: Promise<String> = api.request(route: api.get(endpoint: "/slow"), options: RequestOptions(timeout: 60))
        #expect(await clock.waitForScheduled(2), "the request's timeout and the answer's delay")
        #expect(promise.currentResult == nil)
        clock.advance(by: 30)
        #expect(try await promise.value == "late")
    }

    @Test func cancellingAWaitingAnswerEndsTheRequestAtOnce() async throws {
        let clock = TestClock()
        let stubs = StubTransport(clock: clock)
        stubs.add(Stub(.get, "/slow", answers: StubAnswer.text("late").delayed(by: 30)))
        let api = try api(stubs, clock: clock)
        let promise: Promise<String> = api.request(route: api.get(endpoint: "/slow"))
        #expect(await clock.waitForScheduled(2))
        promise.cancel()
        #expect(await apiError(of: promise)?.isCancellation == true)
    }

    @Test func aChunkedAnswerReportsProgressAndMeetsTheBodyLimit() async throws {
        let stubs = StubTransport()
        let body = patterned(bytes: 100_000)
        stubs.add(Stub(.get, "/blob", answers: StubAnswer.status(200, body: body).chunked(into: 10_000)))
        let api = try api(stubs)
        let seen = Recorder<TransferProgress>()
        let received: Data = try await api.request(route: api.get(endpoint: "/blob")).onProgress { seen.append($0) }.value
        #expect(received == body)
        #expect(await eventually { seen.items.last?.completedBytes == 100_000 })

        let limited = RequestOptions(maximumResponseSize: SizeLimit(bytes: 25_000))
        let tooLarge = await tooLarge(api.request(route: api.get(endpoint: "/blob"), options: limited) as Promise<Data>)
        // Announced as 100,000 bytes: refused at the head.
        #expect(tooLarge?.declaredLength == 100_000)
    }

    @Test func aChunkedAnswerReportsTheUploadInSteps() async throws {
        let stubs = StubTransport()
        stubs.add(Stub(.post, "/upload", answers: StubAnswer.status(204).chunked(into: 4096)))
        let api = try api(stubs)
        let seen = Recorder<TransferProgress>()
        try await (api.request(route: api.post(endpoint: "/upload"), parameters: BodyParameters(patterned(bytes: 10_000))) as Promise<Void>)
            .onProgress(in: DispatchQueue(label: "progress")) { seen.append($0) }
            .value
        #expect(await eventually { seen.items.last { $0.direction == .upload }?.completedBytes == 10_000 })
        let uploads = seen.items.filter { $0.direction == .upload }
        #expect(uploads.allSatisfy { $0.totalBytes == 10_000 })
        #expect(Set(uploads.map(\.completedBytes)).isSubset(of: [4096, 8192, 10_000]))
    }

    @Test func aFailureAnswerIsATransportFailure() async throws {
        let stubs = StubTransport()
        stubs.add(Stub(nil, "/**", answers: .failure(URLError(.notConnectedToInternet))))
        let api = try api(stubs)
        let error = await apiError(of: api.request(route: api.get(endpoint: "/anything")) as Promise<Data>)
        guard case .transportFailed(let failure)? = error else {
            Issue.record("expected transportFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.urlError?.code == .notConnectedToInternet)
    }

    @Test func fileAndStreamBodiesAreRecordedWhole() async throws {
        let stubs = StubTransport()
        stubs.add(Stub(.put, "/**", answers: .status(204)))
        let api = try api(stubs)
        let payload = patterned(bytes: 50_000, seed: 5)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-stub-\(UUID().uuidString)")
        try payload.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try await (api.request(route: api.put(endpoint: "/a"), parameters: BodyParameters(file)) as Promise<Void>).value
        try await (api.request(route: api.put(endpoint: "/b"), parameters: BodyParameters { InputStream(data: payload) }) as Promise<Void>).value
        #expect(stubs.requests.map(\.body) == [payload, payload])
        #expect(stubs.requests.map(\.path) == ["/a", "/b"])
    }

    @Test func aRedirectAnsweredByAStubIsFollowed() async throws {
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/old", answers: .status(301, headers: ["Location": "/new"])))
        stubs.add(Stub(.get, "/new", answers: .text("moved here")))
        let api = try api(stubs)
        let text: String = try await api.request(route: api.get(endpoint: "/old")).value
        #expect(text == "moved here")
        #expect(stubs.requests.map(\.path) == ["/old", "/new"])
    }

    @Test func aLaterStubOverridesAnEarlierOne() async throws {
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/mode", answers: .text("default")))
        stubs.add(Stub(.get, "/mode", answers: .text("override")))
        let api = try api(stubs)
        #expect(try await (api.request(route: api.get(endpoint: "/mode")) as Promise<String>).value == "override")
    }
}
