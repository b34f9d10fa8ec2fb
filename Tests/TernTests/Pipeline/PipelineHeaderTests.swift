import Foundation
import Testing
import Tern

/// The header merge rule and the refusal of header injection.
@Suite(.timeLimit(.minutes(1))) struct PipelineHeaderTests {
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

    @Test func theDelegateIsHeldWeakly() throws {
        let api = try TestAPI()
        do {
            let signer = Signer("X", "1")
            api.delegate = signer
            #expect(api.delegate === signer)
        }
        #expect(api.delegate == nil)
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
}
