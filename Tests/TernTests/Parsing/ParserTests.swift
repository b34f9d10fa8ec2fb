import Foundation
import Testing
import Tern
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Each way a response becomes a value.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ParserTests {
    @Test func jsonDecodesModels() async throws {
        let api = try TestAPI()
        let products: [Product] = try await api.request(route: api.get(endpoint: "/products")).value
        #expect(products == [Product(name: "tern", price: 3), Product(name: "gull", price: 5)])
    }

    @Test func aKeyPathReachesIntoAnEnvelope() async throws {
        let api = try TestAPI(parser: JSONParser(keyPath: "data.items"))
        let products: [Product] = try await api.request(route: api.get(endpoint: "/envelope")).value
        #expect(products == [Product(name: "tern", price: 3)])
    }

    @Test func aMissingKeyPathIsAParsingFailureNamingTheKey() async throws {
        let api = try TestAPI(parser: JSONParser(keyPath: "data.missing"))
        let error = await apiError(of: api.request(route: api.get(endpoint: "/envelope")) as Promise<[Product]>)
        guard case .parsingFailed(let failure)? = error else {
            Issue.record("expected parsingFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.codingPath == "data.missing")
    }

    @Test func concurrentParsesWithDifferentKeyPathsShareOneDecoder() async throws {
        let decoder = JSONDecoder()
        let items = try TestAPI(parser: JSONParser(decoder: decoder, keyPath: "data.items"))
        let page = try TestAPI(parser: JSONParser(decoder: decoder, keyPath: "page"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    let products: [Product] = try await items.request(route: items.get(endpoint: "/envelope")).value
                    #expect(products.count == 1)
                }
                group.addTask {
                    let number: Int = try await page.request(route: page.get(endpoint: "/envelope")).value
                    #expect(number == 1)
                }
            }
            try await group.waitForAll()
        }
    }

    @Test func parseIsTheOverridePointForEnvelopes() async throws {
        final class PageParser: JSONParser, @unchecked Sendable {
            struct Page<T: Decodable>: Decodable { let page: Int; let results: T }
            override func parse<Value: Decodable>(_ type: Value.Type, from response: Response) throws -> Value {
                try super.parse(Page<Value>.self, from: response).results
            }
        }
        let api = try TestAPI(parser: PageParser())
        let products: [Product] = try await api.request(route: api.get(endpoint: "/page")).value
        #expect(products == [Product(name: "tern", price: 3)])
    }

    @Test func dataStringAndResponseAreThereForTheAsking() async throws {
        let api = try TestAPI()
        let data: Data = try await api.request(route: api.get(endpoint: "/huge?bytes=300")).value
        #expect(data == patterned(bytes: 300))
        let text: String = try await api.request(route: api.get(endpoint: "/products")).value
        #expect(text.hasPrefix(#"[{"name": "tern""#))
        let latin1: String = try await api.request(route: api.get(endpoint: "/latin1")).value
        #expect(latin1 == "café")
        let response: Response = try await api.request(route: api.get(endpoint: "/products")).value
        #expect(response.statusCode == 200)
        #expect(response.headers["content-type"] == "application/json")
        #expect(response.url?.path == "/products")
        #expect(response.request.httpMethod == "GET")
        #expect(response.duration > 0)
        #expect(abs(response.start.timeIntervalSinceNow) < 60)
    }

    @Test(arguments: [204, 205])
    func emptyResponsesAreFineForVoidAndOptionals(status: Int) async throws {
        let api = try TestAPI()
        try await (api.request(route: api.delete(endpoint: "/empty/\(status)")) as Promise<Void>).value
        let optional: Product? = try await api.request(route: api.get(endpoint: "/empty/\(status)")).value
        #expect(optional == nil)
        let present: [Product]? = try await api.request(route: api.get(endpoint: "/products")).value
        #expect(present?.first == Product(name: "tern", price: 3))
    }

    @Test func headResponsesAreFineForVoid() async throws {
        let api = try TestAPI()
        try await (api.request(route: api.head(endpoint: "/products")) as Promise<Void>).value
    }

    @Test func validationCanBeChangedForTheAPIAndPerRequest() async throws {
        let lenient = try TestAPI(configuration: APIConfiguration(validation: .statusCodes(200..<500)))
        let body: Data = try await lenient.request(route: lenient.get(endpoint: "/status/404")).value
        #expect(String(decoding: body, as: UTF8.self).contains("404"))

        let strict = try TestAPI()
        let exact: Promise<Data> = strict.request(route: strict.get(endpoint: "/products"), options: RequestOptions(validation: .statusCodes([201])))
        #expect(await apiError(of: exact)?.caseName == "unacceptableStatus")
        let custom: Promise<Data> = strict.request(
            route: strict.get(endpoint: "/status/418"),
            options: RequestOptions(validation: .custom { $0.statusCode == 418 && $0.headers["Content-Type"] == "application/json" })
        )
        let teapot = try await custom.value
        #expect(!teapot.isEmpty)
        let all: Data = try await strict.request(route: strict.get(endpoint: "/status/503"), options: RequestOptions(validation: .acceptAll)).value
        #expect(!all.isEmpty)
    }

    @Test func statusCodeRangesOfEveryShapeAcceptTheirBoundsAndNothingPast() throws {
        let request = URLRequest(url: URL(string: "http://127.0.0.1/")!)
        func response(_ status: Int) throws -> Response {
            Response(request: request, head: try #require(ResponseHead(url: request.url!, statusCode: status, httpVersion: "HTTP/1.1", headers: [:])), body: Data())
        }
        let shapes: [(Validation, accepted: [Int], refused: [Int])] = [
            (.statusCodes(200..<300), [200, 299], [199, 300]),
            (.statusCodes(200...299), [200, 299], [199, 300]),
            (.statusCodes(400...), [400, 599], [399]),
            (.statusCodes(...299), [100, 299], [300]),
            (.statusCodes(..<300), [100, 299], [300]),
            (.statusCodes(Set([201, 204])), [201, 204], [200, 202]),
        ]
        for (validation, accepted, refused) in shapes {
            for status in accepted { #expect(validation.accepts(try response(status)), "\(status)") }
            for status in refused { #expect(!validation.accepts(try response(status)), "\(status)") }
        }
    }

    @Test func aRequestCanUseAnotherParser() async throws {
        let api = try TestAPI()
        let products: [Product] = try await api.request(route: api.get(endpoint: "/envelope"), options: RequestOptions(parser: JSONParser(keyPath: "data.items"))).value
        #expect(products.count == 1)
    }
}
