import Foundation
import Testing
import Tern
import TernTesting
@testable import TernSnippets

@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ReadmeTests {
    @Test func theSampleDataSnippetRuns() async throws {
        let products = try await Tour.sampleData(fixtureURL: URL(fileURLWithPath: "/nonexistent"))
        #expect(products.map(\.name) == ["Arctic tern"])
    }

    @Test func theCustomEncoderAndThePageParserRun() async throws {
        let echo = try await TestAPI().echo(.post, Readme.PlainText(text: "hello"))
        #expect(String(decoding: echo.body, as: UTF8.self) == "hello")
        #expect(echo.header("Content-Type") == "text/plain; charset=utf-8")
        let pages = try TestAPI(parser: Readme.PageParser())
        let products: [Product] = try await pages.request(route: .get("/page")).value
        #expect(products.count == 1)
    }

    /// The Responses and Errors article's own error type: a 404 and a 422 with the server's
    /// error body map to its cases, over a real server.
    @Test func theAppsOwnErrorsMapEachFailure() async throws {
        let server = try LoopbackServer { request in
            request.path == "/products/1" ? ServerResponse(status: 404)
                : .json(#"{"code": 7, "message": "price must be positive"}"#, status: 422)
        }
        defer { server.stop() }
        let shop = Tour.ShopAPI(client: APIClient(configuration: APIConfiguration(baseURL: server.baseURL), responseQueue: .global()))
        let missing = await shop.product(1).result, refused = await shop.product(2).result
        guard case .failure(ShopFailure.notFound) = missing, case .failure(ShopFailure.rejected(let message)) = refused else {
            Issue.record("\(missing), \(refused)")
            return
        }
        #expect(message == "price must be positive")
    }

    @Test func theQueryRulesAreAsDocumented() throws {
        var draft = RequestDraft(method: .get, url: URL(string: "https://x.io/")!)
        try Readme.noBrackets().encode(into: &draft)
        #expect(draft.url.query == "on=true&tags=a&tags=b")
    }

    @Test func theEnumOfTargetsSendsEachCaseAsItsRoute() async throws {
        let seen = Recorder<String>()
        let server = try LoopbackServer { request in
            seen.append("\(request.method) \(request.path)?\(request.queryItems.map { "\($0.name)=\($0.value)" }.joined())")
            return request.method == "GET" ? .json(#"[{"id": 1, "name": "tern", "price": 3}]"#) : ServerResponse(status: 204)
        }
        defer { server.stop() }
        let shop = Readme.TargetedShop(client: APIClient(configuration: APIConfiguration(baseURL: server.baseURL), responseQueue: .global()))
        let firstPage = try await Readme.targets(shop)
        #expect(firstPage.map(\.name) == ["tern"])
        #expect(seen.items == ["GET /products?page=1", "DELETE /products/7?"])
    }

    /// A request awaited as a statement, its value unused, is the `Void` one: not ambiguous
    /// with the whole `Response`, as it was (this test did not compile then).
    @Test func aRequestAwaitedAsAStatementIsTheVoidOne() async throws {
        let seen = Recorder<String>()
        let server = try LoopbackServer { request in
            seen.append("\(request.method) \(request.path)")
            return ServerResponse(status: 204)
        }
        defer { server.stop() }
        let client = APIClient(configuration: APIConfiguration(baseURL: server.baseURL), responseQueue: .global())
        try await client.request(route: .delete("/products/7")).value
        let whole: Response = try await client.request(route: .delete("/products/8")).value
        #expect(whole.statusCode == 204)
        #expect(seen.items == ["DELETE /products/7", "DELETE /products/8"])
    }

    /// The Streaming Responses article's decoding of each event's data: two readings, then the
    /// 204 that ends the source.
    @Test func eachEventsDataDecodesInTheLoop() async throws {
        let served = Recorder<String>()
        let server = try LoopbackServer { request in
            served.append(request.path)
            let body = served.items.count == 1 ? "retry: 500\ndata: {\"sensor\": \"a\", \"value\": 1}\n\ndata: {\"sensor\": \"b\", \"value\": 2.5}\n\n" : ""
            return body.isEmpty ? ServerResponse(status: 204)
                : ServerResponse(status: 200, headers: ["Content-Type": "text/event-stream"], body: Data(body.utf8))
        }
        defer { server.stop() }
        let client = APIClient(configuration: APIConfiguration(baseURL: server.baseURL), responseQueue: .global())
        let readings = try await StreamingSnippets.decodedEvents(client)
        #expect(readings.map(\.sensor) == ["a", "b"] && readings.map(\.value) == [1, 2.5])
        #expect(served.items == ["/readings", "/readings"])
    }

    /// TernTesting's arrivals kept behind a lock of the test's own, and an event stream served
    /// as a plain body: the client reads the one event, and the server's one request is kept.
    @Test func aLoopbackServerKeepsWhatArrivedAndServesEvents() async throws {
        let (events, paths) = try await ArrivalsSnippets.liveEvents()
        #expect(events == ["shipped"])
        #expect(paths == ["/orders/live"])
    }

    @Test func thePromiseChainRuns() async throws {
        let users = Readme.UsersAPI(responseQueue: .global())
        let favorites = try await users.requestUser().then(in: .global(), users.favorites(of:)).value
        #expect(favorites == ["tern"])
    }
}
