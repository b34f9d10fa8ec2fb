import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The header merge rule and the refusal of header injection.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct PipelineHeaderTests {
    final class Signer: APIDelegate {
        let header: (name: String, value: String)
        init(_ name: String, _ value: String) { header = (name, value) }
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue(header.value, forHTTPHeaderField: header.name)
        }
    }

    @Test func commonThenEncoderThenParametersThenDelegateTheLaterWins() async throws {
        let configuration = APIConfiguration(commonHeaders: [
            "X-Common": "common", "X-Overridden": "common", "Content-Type": "text/common", "Authorization": "common",
        ])
        let api = try TestAPI(configuration: configuration)
        let signer = Signer("authorization", "Bearer delegate")
        api.delegate = signer
        let echo = try await api.echo(.post, JSONParameters(["a": 1], headers: ["x-overridden": "parameters"]))
        #expect(echo.header("X-Common") == "common")
        #expect(echo.header("X-Overridden") == "parameters")
        #expect(echo.header("Content-Type") == "application/json")
        #expect(echo.header("Authorization") == "Bearer delegate")
        #expect(echo.header("Accept") == "application/json")
    }

    /// One request's own headers: over the common ones, under the parameters' and the
    /// delegate's, and on that request alone.
    @Test func theRequestsOwnHeadersComeAfterTheCommonOnesAndBeforeTheParameters() async throws {
        let api = try TestAPI(configuration: APIConfiguration(commonHeaders: ["X-Common": "common", "X-Request": "common"]))
        let signer = Signer("X-Signed", "delegate")
        api.delegate = signer
        let options = RequestOptions(headers: ["x-request": "request", "X-Parameters": "request", "X-Signed": "request", "X-Own": "request"])
        let echo = try await api.echo(.post, JSONParameters(["a": 1], headers: ["X-Parameters": "parameters"]), options: options)
        #expect(echo.header("X-Common") == "common")
        #expect(echo.header("X-Request") == "request")
        #expect(echo.header("X-Parameters") == "parameters")
        #expect(echo.header("X-Signed") == "delegate")
        #expect(echo.header("X-Own") == "request")
        let next = try await api.echo(.post, JSONParameters(["a": 1]))
        #expect(next.header("X-Request") == "common")
        #expect(next.header("X-Own") == nil)
    }

    /// A request that adds no headers of its own sends its API's fields, resolved once with the
    /// API: the parser's `Accept` and the common headers, and nothing that another request
    /// added, a delegate signed or a stream asked for.
    @Test func aRequestThatAddsNoHeadersSendsTheAPIsAndNothingAnotherAdded() async throws {
        let api = try TestAPI(configuration: APIConfiguration(commonHeaders: ["X-Common": "common"]))
        let plain = try await api.echo(.get)
        #expect(plain.header("Accept") == "application/json")
        #expect(plain.header("X-Common") == "common")
        let own = try await api.echo(.get, options: RequestOptions(headers: ["X-Own": "own", "X-Common": "own"]))
        #expect(own.header("X-Own") == "own")
        #expect(own.header("X-Common") == "own")
        let signer = Signer("X-Common", "signed")
        api.delegate = signer
        let signed = try await api.echo(.get)
        #expect(signed.header("X-Common") == "signed")
        api.delegate = nil
        var streamed = Data()
        for try await chunk in api.stream(route: api.route(.get, endpoint: "/echo")) { streamed.append(chunk) }
        #expect(try JSONDecoder().decode(Echo.self, from: streamed).header("Accept") == "*/*")
        let after = try await api.echo(.get)
        #expect(after.header("Accept") == "application/json")
        #expect(after.header("X-Common") == "common")
        #expect(after.header("X-Own") == nil)
    }

    /// The API holds its delegate until it is replaced: nothing else need keep it.
    @Test func theDelegateIsHeldByTheAPI() throws {
        let api = try TestAPI()
        let watched: WeakRef<Signer>
        do {
            let signer = Signer("X", "1")
            watched = WeakRef(signer)
            api.delegate = signer
        }
        #expect(!watched.isFreed && api.delegate === watched.object)
        api.delegate = nil
        #expect(watched.isFreed)
    }

    @Test(arguments: [
        ("common", "X-Evil", "1\r\nX-Injected: yes"),
        ("parameters", "X-Evil", "1\r\nX-Injected: yes"),
        ("parameters", "X-Evil\r\nX-Injected", "yes"),
        ("delegate", "X-Evil\r\nX-Injected", "yes"),
    ])
    func aHeaderWithALineBreakIsRefusedWhereverItComesFrom(source: String, name: String, value: String) async throws {
        let injected = HTTPHeaders([(name, value)])
        let api = try TestAPI(configuration: APIConfiguration(commonHeaders: source == "common" ? injected : [:]))
        let signer = Signer(name, value)
        if source == "delegate" { api.delegate = signer }
        let promise: Promise<Echo> = api.request(
            route: api.get(endpoint: "/echo"),
            parameters: URLParameters([:], headers: source == "parameters" ? injected : [:])
        )
        let error = await apiError(of: promise)
        guard case .invalidRequest(let failure)? = error else {
            Issue.record("expected invalidRequest, got \(String(describing: error))")
            return
        }
        #expect(failure.reason == .invalidHeader(name: name))
        #expect(failure.description.contains("X-Evil"))
    }

    @Test func aValueWithALineBreakSetByTheDelegateNeverReachesTheServer() async throws {
        // Foundation drops such a value from the URLRequest; whatever happens, nothing is injected.
        let api = try TestAPI()
        let signer = Signer("X-Evil", "1\r\nX-Injected: yes")
        api.delegate = signer
        let result = await (api.request(route: api.get(endpoint: "/echo")) as Promise<Echo>).result
        switch result {
        case .success(let echo):
            #expect(echo.header("X-Injected") == nil)
            #expect(echo.header("X-Evil") == nil)
        case .failure(let error):
            #expect((error as? APIError)?.caseName == "invalidRequest")
        }
    }

    @Test func aDelegateThatThrowsStopsTheRequest() async throws {
        final class Refuser: APIDelegate {
            func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws { throw TestError(code: 41) }
        }
        let api = try TestAPI()
        let refuser = Refuser()
        api.delegate = refuser
        let error = await apiError(of: api.request(route: api.get(endpoint: "/echo")) as Promise<Echo>)
        guard case .invalidRequest(let failure)? = error else {
            Issue.record("expected invalidRequest, got \(String(describing: error))")
            return
        }
        #expect(failure.description.contains("the delegate stopped the request"))
    }

    /// A server that records the path of every request it receives: what a refused request must
    /// never reach.
    private func recordingServer() throws -> (LoopbackServer, Recorder<String>) {
        let received = Recorder<String>()
        let server = try LoopbackServer { request in
            received.append("\(request.method) \(request.path)")
            return .json(#"{"name": "tern", "price": 3}"#)
        }
        return (server, received)
    }

    /// The invalid request's reason, or a recorded issue naming what came instead.
    private func refusal<T>(_ promise: Promise<T>) async -> APIError.InvalidRequest.Reason? {
        let error = await apiError(of: promise)
        guard case .invalidRequest(let failure)? = error else {
            Issue.record("expected invalidRequest, got \(String(describing: error))")
            return nil
        }
        return failure.reason
    }

    /// A method with a space or a line break used to put a second request on the wire.
    @Test(arguments: ["GET /other HTTP/1.1\r\nHost: x\r\n\r\nGET", "GE T", "GET\n", "", "PÜT", "GET\0"])
    func aMethodThatIsNotATokenIsRefusedBeforeSending(method: String) async throws {
        let (server, received) = try recordingServer()
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        let reason = await refusal(api.request(route: api.route(HTTPMethod(rawValue: method), endpoint: "/a")) as Promise<Data>)
        #expect(reason == .invalidMethod(method))
        let _: Data = try await api.request(route: api.route("PURGE", endpoint: "/b")).value
        #expect(received.items == ["PURGE /b"])
    }

    @Test func aMethodChangedByAnAdapterIsCheckedToo() async throws {
        struct Smuggler: RequestAdapter {
            func adapt(_ request: inout URLRequest) throws { request.httpMethod = "GET / HTTP/1.1\r\n\r\nDELETE" }
        }
        let (server, received) = try recordingServer()
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(retryPolicy: .never, adapters: [Smuggler()]))
        let reason = await refusal(api.request(route: api.get(endpoint: "/a")) as Promise<Data>)
        #expect(reason == .invalidMethod("GET / HTTP/1.1\r\n\r\nDELETE"))
        #expect(received.items.isEmpty)
    }

    /// With `Content-Length: 1` on a longer body, the next requests on a kept-alive connection
    /// used to get each other's responses. Framing is the transport's, from every source.
    @Test(arguments: HTTPHeaders.framingNames.flatMap { name in
        ["common", "parameters", "adapter", "delegate"].map { (name, $0) }
    })
    func aFramingHeaderIsRefusedWhereverItComesFrom(name: String, source: String) async throws {
        struct Framer: RequestAdapter {
            let name: String
            func adapt(_ request: inout URLRequest) throws { request.setValue("1", forHTTPHeaderField: name) }
        }
        let (server, received) = try recordingServer()
        defer { server.stop() }
        let header: HTTPHeaders = [name.lowercased(): "1"]
        let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(
            commonHeaders: source == "common" ? header : [:],
            retryPolicy: .never,
            adapters: source == "adapter" ? [Framer(name: name)] : []
        ))
        let signer = Signer(name, "1")
        if source == "delegate" { api.delegate = signer }
        let promise: Promise<Data> = api.request(route: api.post(endpoint: "/a"), parameters: BodyParameters(
            Data(String(repeating: "x", count: 55).utf8), headers: source == "parameters" ? header : [:]
        ))
        let reason = await refusal(promise)
        guard case .framingHeader(let refused)? = reason else {
            Issue.record("expected framingHeader, got \(String(describing: reason))")
            return
        }
        #expect(refused.lowercased() == name.lowercased())
        #expect(received.items.isEmpty)
    }

    /// Foundation keeps VT, FF and DEL in a `URLRequest`, and they were mangled on the way.
    @Test(arguments: ["\u{0B}", "\u{0C}", "\u{7F}", "\u{1B}"], ["parameters", "delegate"])
    func aValueWithAnotherControlCharacterIsRefused(character: String, source: String) async throws {
        let (server, received) = try recordingServer()
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        let signer = Signer("X-Odd", "a\(character)b")
        if source == "delegate" { api.delegate = signer }
        let promise: Promise<Data> = api.request(
            route: api.get(endpoint: "/a"),
            parameters: URLParameters([:], headers: source == "parameters" ? ["X-Odd": "a\(character)b"] : [:])
        )
        #expect(await refusal(promise) == .invalidHeader(name: "X-Odd"))
        #expect(received.items.isEmpty)
    }

    /// Part headers and media types are written into the body: a line break there injected
    /// headers or whole parts.
    @Test(arguments: [
        Part(name: "a", data: Data("x".utf8), filename: "a.txt", mimeType: "text/plain\r\nX-Injected: yes"),
        Part(name: "a", value: "x", headers: ["X-Part": "1\r\n\r\n--boundary"]),
        Part(name: "a", value: "x", headers: ["X-Part\r\nInjected": "1"]),
        Part(name: "a", value: "x", headers: ["X-Part": "1\u{0B}"]),
    ])
    func aPartHeaderThatCouldInjectIsRefused(part: Part) async throws {
        let (server, received) = try recordingServer()
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        let promise: Promise<Data> = api.request(route: api.post(endpoint: "/a"), parameters: MultipartParameters(parts: [part]))
        let reason = await refusal(promise)
        guard case .invalidPartHeader(let name, _)? = reason else {
            Issue.record("expected invalidPartHeader, got \(String(describing: reason))")
            return
        }
        #expect(name == "a")
        #expect(received.items.isEmpty)
    }
}
