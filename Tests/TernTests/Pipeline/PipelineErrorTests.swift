import Foundation
import Testing
import Tern
import TernTesting

/// Every way a request can fail ends in one typed `APIError` with a description that says what
/// went wrong.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct PipelineErrorTests {
    @Test(arguments: ["not a url", "http://", "://missing-scheme", "", "http://127.0.0.1:99999/a", "http://127.0.0.1:8o/a"])
    func anInvalidURLIsNamed(url: String) async throws {
        // No base URL: a relative one would join it.
        let api = APIClient(configuration: APIConfiguration(retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        let error = await apiError(of: api.request(route: .get(url)) as Promise<Void>)
        guard case .invalidRequest(let failure)? = error else {
            Issue.record("expected invalidRequest for \"\(url)\", got \(String(describing: error))")
            return
        }
        #expect(failure.reason == .invalidURL(url))
        let why = url.hasPrefix("http") ? "is not a valid URL" : "is a relative URL, and the API has no base URL to join it to (set APIConfiguration.baseURL)"
        #expect(failure.description == "Invalid request: \"\(url)\" \(why) (for GET).")
    }

    @Test func encodingFailuresNameTheParameter() async throws {
        struct Unencodable: Encodable, Sendable {
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(Double.nan, forKey: .ratio)
            }
            enum CodingKeys: CodingKey { case ratio }
        }
        let api = try TestAPI()
        let error = await apiError(of: api.request(route: api.post(endpoint: "/echo"), parameters: JSONParameters(Unencodable())) as Promise<Void>)
        guard case .encodingFailed(let failure)? = error else {
            Issue.record("expected encodingFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.parameter == "JSONParameters<Unencodable> at ratio")
        #expect(failure.description.hasPrefix("Could not encode the parameter JSONParameters<Unencodable> at ratio"))
    }

    @Test func aRefusedConnectionIsATransportFailureKeepingTheURLError() async throws {
        let closed = try ClosedPort()
        defer { withExtendedLifetime(closed) {} }
        let url = closed.baseURL + "/nothing"
        let api = try TestAPI()
        let error = await apiError(of: api.request(route: .get(url)) as Promise<Void>)
        guard case .transportFailed(let failure)? = error else {
            Issue.record("expected transportFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.urlError?.code == .cannotConnectToHost)
        #expect(failure.description.hasPrefix("GET \(url) failed before a response arrived"))
    }

    @Test(arguments: ["/hangup", "/truncated"])
    func aServerThatHangsUpIsATransportFailure(endpoint: String) async throws {
        let api = try TestAPI()
        let error = await apiError(of: api.request(route: api.get(endpoint: endpoint)) as Promise<Data>)
        guard case .transportFailed(let failure)? = error else {
            Issue.record("expected transportFailed for \(endpoint), got \(String(describing: error))")
            return
        }
        #expect(failure.urlError != nil)
    }

    @Test func anUnacceptableStatusCarriesStatusHeadersBodyAndTheServersError() async throws {
        let api = try TestAPI()
        let error = await apiError(of: api.request(route: api.get(endpoint: "/status/500")) as Promise<[Product]>)
        guard case .unacceptableStatus(let failure)? = error else {
            Issue.record("expected unacceptableStatus, got \(String(describing: error))")
            return
        }
        #expect(failure.statusCode == 500)
        #expect(failure.method == "GET")
        #expect(failure.url?.path == "/status/500")
        #expect(failure.headers["Content-Type"] == "application/json")
        #expect(String(decoding: failure.body, as: UTF8.self) == #"{"code": 500, "message": "status 500"}"#)
        #expect(failure.serverError(as: ShopError.self) == ShopError(code: 500, message: "status 500"))
        #expect(failure.description.contains("answered 500"))
        #expect(failure.description.contains("server error: ShopError(code: 500"))
    }

    @Test func theErrorNamesTheFailedRequestWhateverItsCase() async throws {
        let api = try TestAPI()
        let status = await apiError(of: api.request(route: api.post(endpoint: "/status/503")) as Promise<Void>)
        #expect(status?.method == "POST")
        #expect(status?.url?.path == "/status/503")

        let parsing = await apiError(of: api.request(route: api.get(endpoint: "/malformed")) as Promise<Product>)
        #expect(parsing?.caseName == "parsingFailed")
        #expect(parsing?.method == "GET")
        #expect(parsing?.url?.path == "/malformed")

        let invalid = await apiError(of: api.request(route: Route(method: "DELETE", url: "http://")) as Promise<Void>)
        #expect(invalid?.caseName == "invalidRequest")
        #expect(invalid?.method == "DELETE")
        #expect(invalid?.url == nil)

        // A promise's own failure concerns no request.
        let promise = await apiError(of: Promise<Int>.any([], in: .global()))
        #expect(promise?.caseName == "promise")
        #expect(promise?.method == nil && promise?.url == nil)
    }

    @Test func theErrorSaysWhatAnsweredAndWhatFailedBeneathWhateverItsCase() async throws {
        let api = try TestAPI()
        let status = await apiError(of: api.request(route: api.post(endpoint: "/status/503")) as Promise<Void>)
        #expect(status?.statusCode == 503)
        #expect(status?.underlyingError == nil)

        let parsing = await apiError(of: api.request(route: api.get(endpoint: "/malformed")) as Promise<Product>)
        #expect(parsing?.statusCode == 200)
        #expect(parsing?.underlyingError is DecodingError)

        let closed = try ClosedPort()
        defer { withExtendedLifetime(closed) {} }
        let refused = await apiError(of: api.request(route: .get(closed.baseURL + "/nothing")) as Promise<Void>)
        #expect(refused?.caseName == "transportFailed")
        #expect(refused?.statusCode == nil)
        #expect((refused?.underlyingError as? URLError)?.code == .cannotConnectToHost)

        let promise = await apiError(of: Promise<Int>.any([], in: .global()))
        #expect(promise?.statusCode == nil && promise?.underlyingError == nil)
    }

    @Test func withoutAnErrorTypeTheServerErrorIsNil() async throws {
        let api = try TestAPI(parser: JSONParser())
        let error = await apiError(of: api.request(route: api.get(endpoint: "/status/404")) as Promise<Data>)
        guard case .unacceptableStatus(let failure)? = error else {
            Issue.record("expected unacceptableStatus, got \(String(describing: error))")
            return
        }
        #expect(failure.serverError == nil)
        #expect(failure.statusCode == 404)
    }

    /// Asked for as a `Decodable` type, the server's error body is decoded then, whatever parser
    /// the API was made with; a body of another shape is no such error.
    @Test func anErrorBodyIsDecodedWhenAskedForWithTheDefaultParser() async throws {
        let api = try TestAPI(parser: JSONParser())
        let error = await apiError(of: api.request(route: api.get(endpoint: "/status/500")) as Promise<Data>)
        guard case .unacceptableStatus(let failure)? = error else {
            Issue.record("expected unacceptableStatus, got \(String(describing: error))")
            return
        }
        #expect(failure.serverError == nil)
        #expect(failure.serverError(as: ShopError.self) == ShopError(code: 500, message: "status 500"))
        struct OtherError: Error, Decodable { let reason: String }
        #expect(failure.serverError(as: OtherError.self) == nil)
        let snakeCase = JSONDecoder()
        snakeCase.keyDecodingStrategy = .convertFromSnakeCase
        #expect(failure.serverError(as: ShopError.self, decoder: snakeCase)?.code == 500)
    }

    @Test func aParsingFailureCarriesTheCodingPathURLStatusAndBody() async throws {
        let api = try TestAPI()
        let error = await apiError(of: api.request(route: api.get(endpoint: "/bad-products")) as Promise<[Product]>)
        guard case .parsingFailed(let failure)? = error else {
            Issue.record("expected parsingFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.codingPath == "[1].price")
        #expect(failure.type == "Array<Product>")
        #expect(failure.statusCode == 200)
        #expect(failure.url?.path == "/bad-products")
        #expect(String(decoding: failure.bodySnippet, as: UTF8.self).contains("cheap"))
        #expect(failure.description.hasPrefix("Could not parse Array<Product> at [1].price from GET"))
    }

    /// A snake_case `CodingKey` under a decoder that converts from snake_case looks for a key
    /// the body plainly has: the error says why, and only then.
    @Test(arguments: [true, false])
    func aSnakeCaseKeyMissedUnderConvertFromSnakeCaseSaysWhy(converting: Bool) async throws {
        struct Tokens: Decodable {
            let accessToken: String
            enum CodingKeys: String, CodingKey { case accessToken = "access_token" }
        }
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/token", answers: .json(converting ? #"{"access_token": "a"}"# : #"{"token": "a"}"#)))
        let decoder = JSONDecoder()
        if converting { decoder.keyDecodingStrategy = .convertFromSnakeCase }
        let client = APIClient(responseParser: JSONParser(decoder: decoder), configuration: APIConfiguration(baseURL: "https://shop.example"),
                               transport: stubs, responseQueue: .global())
        let error = await apiError(of: client.request(route: .get("/token")) as Promise<Tokens>)
        guard case .parsingFailed(let failure)? = error else {
            Issue.record("expected parsingFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.description.contains("with .convertFromSnakeCase, name its CodingKey in camelCase") == converting, "\(failure)")
    }

    /// A property named with an acronym (`htmlURL`) under a decoder that converts from
    /// snake_case, which reads the body's `html_url` as `htmlUrl`: the error names both.
    @Test(arguments: [true, false])
    func anAcronymMissedUnderConvertFromSnakeCaseSaysWhy(bodyHasIt: Bool) async throws {
        struct Repository: Decodable { let htmlURL: String }
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/repo", answers: .json(bodyHasIt ? #"{"html_url": "u"}"# : #"{"url": "u"}"#)))
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let client = APIClient(responseParser: JSONParser(decoder: decoder), configuration: APIConfiguration(baseURL: "https://shop.example"),
                               transport: stubs, responseQueue: .global())
        let error = await apiError(of: client.request(route: .get("/repo")) as Promise<Repository>)
        guard case .parsingFailed(let failure)? = error else {
            Issue.record("expected parsingFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.description.contains(#"the body has "html_url", which .convertFromSnakeCase reads as htmlUrl, not htmlURL"#) == bodyHasIt, "\(failure)")
    }

    @Test func malformedJSONIsAParsingFailure() async throws {
        let api = try TestAPI()
        let error = await apiError(of: api.request(route: api.get(endpoint: "/malformed")) as Promise<Product>)
        guard case .parsingFailed(let failure)? = error else {
            Issue.record("expected parsingFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.description.contains("the data is not valid"))
        #expect(String(decoding: failure.bodySnippet, as: UTF8.self) == #"{"name": "#)
    }

    @Test func theBodySnippetIsCutAt512Bytes() async throws {
        let api = try TestAPI()
        let error = await apiError(of: api.request(route: api.get(endpoint: "/huge?bytes=5000")) as Promise<Product>)
        guard case .parsingFailed(let failure)? = error else {
            Issue.record("expected parsingFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.bodySnippet.count == 512)
        #expect(failure.description.contains("(5000 bytes in all)") == false)  // the snippet alone is kept
    }

    @Test func anEmptyBodyWhereAValueWasExpectedSaysSo() async throws {
        let api = try TestAPI()
        let error = await apiError(of: api.request(route: api.get(endpoint: "/empty/200")) as Promise<Product>)
        guard case .parsingFailed(let failure)? = error else {
            Issue.record("expected parsingFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.description.contains("the body is empty"))
    }

    /// The snippet used to be a slice of the whole body, which the error then kept alive.
    @Test func aParsingFailureKeepsACopyOfTheSnippetNotTheBody() throws {
        let body = Data(repeating: 0x41, count: 1 << 20)
        let failure = APIError.ParsingFailure(type: "T", method: "GET", url: nil, statusCode: 200, codingPath: "",
                                              underlying: TestError(), body: body)
        #expect(failure.bodySnippet.count == APIError.snippetLength)
        let bodyStart = body.withUnsafeBytes { $0.baseAddress }
        let snippetStart = failure.bodySnippet.withUnsafeBytes { $0.baseAddress }
        #expect(bodyStart != snippetStart)
    }

    /// A 10 MB query used to make a 30 MB description; a 1 MB one shows the bound as well.
    @Test func descriptionsStayShortWhateverTheRequest() async throws {
        let closed = try ClosedPort()
        defer { withExtendedLifetime(closed) {} }
        let api = try TestAPI(baseURL: closed.baseURL)
        let huge = String(repeating: "q", count: 1_000_000)
        let error = await apiError(of: api.request(route: api.get(endpoint: "/a"), parameters: URLParameters(["q": huge])) as Promise<Data>)
        let description = try #require(error).description
        #expect(description.utf8.count < 4096)
        #expect(description.contains("bytes in all"))
        let invalid = await apiError(of: api.request(route: .get("not a url " + huge)) as Promise<Data>)
        #expect(try #require(invalid).description.utf8.count < 4096)
    }

    @Test func aPasswordInTheURLIsHiddenInErrors() async throws {
        let closed = try ClosedPort()
        defer { withExtendedLifetime(closed) {} }
        let api = try TestAPI()
        let url = closed.baseURL.replacingOccurrences(of: "://", with: "://alice:PASSWORD@") + "/a"
        let error = await apiError(of: api.request(route: .get(url)) as Promise<Data>)
        let description = try #require(error).description
        #expect(!description.contains("PASSWORD"))
        #expect(description.contains("alice:***@"))
    }
}
