#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// The app's own code in a request's stages (a delegate signing it, a plugin, a parser or a
/// validation of its own, a stream's head judged) may wait for another request through the
/// same transport, as code written for URLSession often does. That request needs the
/// transport's thread, so the app's code never runs there: it waited for its whole timeout
/// when the stages ran on the loop while it was idle.
///
/// One at a time: each blocks a dispatch worker while it waits, and Linux's dispatch adds
/// workers about once a second; run together they starved one another and every test beside
/// them (the stub-clock streaming tests took 2-4 s instead of milliseconds, and over 30 s once
/// under the thread sanitizer).
@Suite(.onTestThreads, .serialized, .timeLimit(.minutes(1))) struct AppCodeWaitingTests {
    /// Answers `/token` with a token, `/list` with a JSON list, anything else with "ok".
    static func server() throws -> LoopbackServer {
        try LoopbackServer { request in
            switch request.path {
            case "/token": .text("t")
            case "/list": .json("[\"ok\"]")
            default: .text("ok")
            }
        }
    }

    /// A token fetched through `tokens` and waited for, blocking the thread, for up to 20 s
    /// (the request it waits on takes milliseconds; run on the loop's thread, it took all 20).
    static func waitForToken(_ tokens: AbstractAPI, at url: String) throws -> String {
        try (tokens.request(route: .get(url + "/token")) as Promise<String>).wait(timeout: 20)
    }

    final class WaitingSigner: APIDelegate, Sendable {
        let tokens: AbstractAPI
        let url: String
        init(tokens: AbstractAPI, url: String) { (self.tokens, self.url) = (tokens, url) }
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer \(try waitForToken(tokens, at: url))", forHTTPHeaderField: "Authorization")
        }
    }

    struct WaitingParser: ResponseParser {
        let tokens: AbstractAPI
        let url: String
        /// The list with the token first.
        func parse<Value: Decodable>(_ type: Value.Type, from response: Response) throws -> Value {
            let list = try [try waitForToken(tokens, at: url)] + JSONParser().parse([String].self, from: response)
            return try JSONParser().parse(type, from: Response(request: response.request, head: response.head,
                                                              body: try JSONEncoder().encode(list), timing: response.timing))
        }
    }

    struct WaitingPlugin: Plugin {
        let tokens: AbstractAPI
        let url: String
        let seen: Recorder<String>
        func observe(_ event: PluginEvent, api: APIContext) {
            guard case .didReceive(_, let request) = event, request.url?.path != "/token" else { return }
            seen.append((try? waitForToken(tokens, at: url)) ?? "no token")
        }
    }

    /// Two APIs on one transport: one for tokens, one whose stages wait for them.
    func apis(_ server: LoopbackServer, plugins: (AbstractAPI) -> [any Plugin] = { _ in [] },
              parser: ((AbstractAPI) -> any ResponseParser)? = nil) throws -> (api: AbstractAPI, tokens: AbstractAPI) {
        let transport = try CurlTransport()
        let tokens = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: transport, responseQueue: .global())
        let api = AbstractAPI(responseParser: parser?(tokens) ?? JSONParser(),
                              configuration: APIConfiguration(retryPolicy: .never, plugins: plugins(tokens)),
                              transport: transport, responseQueue: .global())
        return (api, tokens)
    }

    @Test func aDelegateThatWaitsForATokenSignsEveryRequest() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let (api, tokens) = try apis(server)
        let signer = WaitingSigner(tokens: tokens, url: server.baseURL)
        api.delegate = signer
        // One after another: the loop is idle as each starts, when it would take the stages.
        for _ in 0..<3 {
            let answer: String = try await api.request(route: .get(server.baseURL + "/orders")).value
            #expect(answer == "ok")
        }
        withExtendedLifetime(signer) {}
    }

    @Test func aParserThatWaitsForATokenParsesEveryResponse() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let (api, _) = try apis(server, parser: { WaitingParser(tokens: $0, url: server.baseURL) })
        for _ in 0..<3 {
            let answer: [String] = try await api.request(route: .get(server.baseURL + "/list")).value
            #expect(answer == ["t", "ok"])
        }
    }

    @Test func aPluginThatWaitsForATokenSeesEveryResponse() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let seen = Recorder<String>()
        let (api, _) = try apis(server, plugins: { [WaitingPlugin(tokens: $0, url: server.baseURL, seen: seen)] })
        for _ in 0..<3 {
            let answer: String = try await api.request(route: .get(server.baseURL + "/orders")).value
            #expect(answer == "ok")
        }
        #expect(seen.items == Array(repeating: "t", count: 3))
    }

    /// A stream's head is judged as it arrives; by the app's code, off the transport's thread.
    @Test func aStreamWhosePluginWaitsForATokenOpensEveryTime() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let seen = Recorder<String>()
        let (api, _) = try apis(server, plugins: { [WaitingPlugin(tokens: $0, url: server.baseURL, seen: seen)] })
        for _ in 0..<3 {
            var body = Data()
            for try await chunk in api.stream(route: .get(server.baseURL + "/orders")) { body.append(chunk) }
            #expect(String(decoding: body, as: UTF8.self) == "ok")
        }
        #expect(seen.items == Array(repeating: "t", count: 3))
    }

    @Test func aValidationThatWaitsForATokenJudgesEveryResponse() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let (api, tokens) = try apis(server)
        let validation = Validation.custom { response in
            response.statusCode == 200 && (try? Self.waitForToken(tokens, at: server.baseURL)) == "t"
        }
        for _ in 0..<3 {
            let answer: String = try await api.request(route: .get(server.baseURL + "/orders"), options: RequestOptions(validation: validation)).value
            #expect(answer == "ok")
        }
    }
}
#endif
