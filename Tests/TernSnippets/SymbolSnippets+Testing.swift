import Foundation
import Tern
import TernTesting
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The examples in the documentation comments of `TernTesting`'s symbols, compiled (see
// SymbolSnippets.swift). A service here is a Sendable struct holding an `APIClient`, as the
// README teaches.

extension SymbolSnippets {
    enum TestingDocs {
        typealias ShopAPI = Tour.ShopAPI

        static func servers() throws -> [ShopAPI] {
            let closed = try ClosedPort()
            let shop = ShopAPI(client: APIClient(configuration: APIConfiguration(baseURL: closed.baseURL)))   // every request fails: connection refused
            return [shop, try loopback()]
        }

        static func loopback() throws -> ShopAPI {
            let server = try LoopbackServer { request in
                request.path == "/products" ? .json(#"[{"name":"tern"}]"#) : ServerResponse(status: 404)
            }
            defer { server.stop() }
            let shop = ShopAPI(client: APIClient(configuration: APIConfiguration(baseURL: server.baseURL)))
            return shop
        }

        static func clocks(client: APIClient, clock: TestClock) async throws {
            let clock = TestClock()
            let value = Promise(value: 1).delay(5, clock: clock)
            await clock.waitForScheduled(1)     // the delay is waiting
            clock.advance(by: 5)                // and now it is over, instantly
            _ = value
        }

        static func deliveries(client: APIClient, clock: TestClock) async throws {
            var events = client.stream(route: .post("/v1/completions")).events.makeAsyncIterator()
            await clock.advanceToNextDelivery()       // the first event's wait is over
            let first = try await events.next()
            _ = first
        }

        static func stubs(product: Product, fixture: URL) throws {
            _ =
            Stub(.get, "/products/*", query: ["page": "2"], answers: .json("[]"))
            _ =
            Stub(.post, "/login", answers: .status(401), .json(#"{"token": "t"}"#))
            _ =
            Stub(.post, "/echo") { request in .status(200, body: request.body) }
            _ = StubAnswer
                .json(#"{"id": 1}"#)
            _ = StubAnswer
                .status(401)
            _ = try StubAnswer
                .json(product, status: 201).delayed(by: 2)                       // with `try`: encoding may fail
            _ = try StubAnswer
                .file(fixture, contentType: "image/png").chunked(into: 16_384)   // with `try`: the file is read now
            _ = StubAnswer
                .failure(URLError(.notConnectedToInternet))
            _ = StubAnswer
                .streamed([(after: 0, "first\n"), (after: 1, "second\n")])
            _ = StubAnswer
                .events([(after: 0.1, ServerSentEvent(data: "A tern")), (after: 0.1, ServerSentEvent(data: " is"))])
        }

        static func stubTransport() async throws -> [Readme.Product] {
            let stubs = StubTransport()
            stubs.add(Stub(.get, "/api/v2/products", answers: .json(#"[{"id": 1, "name": "tern", "price": 3}]"#)))
            let shop = ShopAPI(client: APIClient(configuration: .production, transport: stubs))
            let products = try await shop.products(page: 1).value
            #expect(stubs.requests.first?.queryItems.first?.value == "1")
            return products
        }

        static func recordings(fixtures: URL) async throws -> RecordingOptions {
            let options = RecordingOptions(matchedHeaders: ["Accept"], matchesBody: true, secrets: ["api_key", "session_token"])
            let tape = try RecordingTransport(file: fixtures.appendingPathComponent("products.har"), mode: .replay)
            let recordedShop = ShopAPI(client: APIClient(configuration: .production, transport: tape))
            let replayed = try await recordedShop.products(page: 1).value   // as recorded, no network
            _ = replayed
            return options
        }
    }
}
