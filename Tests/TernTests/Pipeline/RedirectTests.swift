import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Tern follows redirects itself: methods and bodies by status, credentials kept at their
/// origin, limits, and the policy's choices. The second origin is a second loopback server (a
/// different port is a different origin).
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RedirectTests {
    /// A delegate that signs every request it is asked to and counts them.
    final class Signer: APIDelegate {
        let signed = Recorder<String>()
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            signed.append(request.url?.absoluteString ?? "")
            request.setValue("Bearer secret", forHTTPHeaderField: "Authorization")
        }
    }

    /// A server at another origin that answers like the test server and records what it got.
    final class OtherOrigin: Sendable {
        let received = Recorder<RecordedRequest>()
        let server: LoopbackServer

        init() throws {
            let received = received
            server = try LoopbackServer { request in
                received.append(request)
                return TestServer.route(request)
            }
        }

        var baseURL: String { server.baseURL }
    }

    /// `/redirect/<status>?to=<location>` on the test server.
    static func redirect(_ status: Int, to location: String) -> String {
        "/redirect/\(status)?to=" + (location.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? location)
    }

    /// Headers that are credentials, and one that is not.
    static let credentialHeaders: HTTPHeaders = [
        "Authorization": "Basic dXNlcjpwYXNz", "Proxy-Authorization": "Basic cHJveHk=", "Cookie": "session=1",
        "X-Api-Key": "k", "X-Trace": "t",
    ]

    @Test func aRedirectToTheSameOriginKeepsEveryHeader() async throws {
        let api = try TestAPI(configuration: APIConfiguration(commonHeaders: Self.credentialHeaders, retryPolicy: .never))
        let signer = Signer()
        api.delegate = signer
        let echo: Echo = try await api.request(route: api.get(endpoint: Self.redirect(302, to: "/echo?hop=2"))).value
        #expect(echo.path == "/echo")
        #expect(echo.query == "hop=2")
        #expect(echo.header("Authorization") == "Bearer secret")
        #expect(echo.header("Proxy-Authorization") == "Basic cHJveHk=")
        #expect(echo.header("Cookie") == "session=1")
        #expect(signer.signed.items.count == 2)
    }

    @Test func aRelativeLocationResolvesAgainstTheRedirectedURL() async throws {
        let api = try TestAPI()
        let echo: Echo = try await api.request(route: api.get(endpoint: Self.redirect(301, to: "../echo?relative=1"))).value
        #expect(echo.path == "/echo")
        #expect(echo.query == "relative=1")
    }

    @Test func anotherOriginGetsNoCredentialAndNoSignature() async throws {
        let other = try OtherOrigin()
        let policy = RedirectPolicy(sensitiveHeaders: ["x-api-KEY"])
        let api = try TestAPI(configuration: APIConfiguration(commonHeaders: Self.credentialHeaders, retryPolicy: .never, redirectPolicy: policy))
        let signer = Signer()
        api.delegate = signer
        let echo: Echo = try await api.request(route: api.get(endpoint: Self.redirect(302, to: other.baseURL + "/echo"))).value
        for name in ["Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key"] {
            #expect(echo.header(name) == nil, "\(name) reached the other origin")
        }
        #expect(echo.header("X-Trace") == "t")
        #expect(signer.signed.items.count == 1)
        #expect(other.received.items.count == 1)
    }

    /// Go's CVE-2024-45336: a chain that leaves the origin and comes back must not get its
    /// credentials back.
    @Test func credentialsDroppedOnceStayDroppedWhenTheChainComesBack() async throws {
        let other = try OtherOrigin()
        let home = try TestServer.baseURL
        let api = try TestAPI(configuration: APIConfiguration(commonHeaders: Self.credentialHeaders, retryPolicy: .never))
        let signer = Signer()
        api.delegate = signer
        let away = other.baseURL + Self.redirect(307, to: home + "/echo")
        let echo: Echo = try await api.request(route: api.get(endpoint: Self.redirect(302, to: away))).value
        #expect(echo.path == "/echo")
        #expect(echo.header("Authorization") == nil)
        #expect(echo.header("Cookie") == nil)
        #expect(signer.signed.items.count == 1)
    }

    @Test func anAdapterCannotPutCredentialsBackOnAnotherOrigin() async throws {
        struct AddKey: RequestAdapter {
            func adapt(_ request: inout URLRequest) throws { request.setValue("Bearer adapter", forHTTPHeaderField: "Authorization") }
        }
        let other = try OtherOrigin()
        let api = try TestAPI(configuration: APIConfiguration(retryPolicy: .never, adapters: [AddKey()]))
        _ = try await (api.request(route: api.get(endpoint: Self.redirect(302, to: other.baseURL + "/echo"))) as Promise<Echo>).value
        #expect(other.received.items.first?.headers["Authorization"] == nil)
    }

    @Test func a303TurnsIntoAGetWithoutABody() async throws {
        let api = try TestAPI()
        let echo: Echo = try await api.request(route: api.post(endpoint: Self.redirect(303, to: "/echo")),
                                               parameters: JSONParameters(["name": "tern"])).value
        #expect(echo.method == "GET")
        #expect(echo.body.isEmpty)
        #expect(echo.header("Content-Type") == nil)
    }

    @Test(arguments: [301, 302])
    func a301Or302AfterAPostTurnsIntoAGet(status: Int) async throws {
        let api = try TestAPI()
        let echo: Echo = try await api.request(route: api.post(endpoint: Self.redirect(status, to: "/echo")),
                                               parameters: FormParameters(["a": "1"])).value
        #expect(echo.method == "GET")
        #expect(echo.body.isEmpty)
    }

    @Test(arguments: [(307, HTTPMethod.post), (308, .put), (302, .put)])
    func theMethodAndBodyAreKept(status: Int, method: HTTPMethod) async throws {
        let api = try TestAPI()
        let echo: Echo = try await api.request(route: api.route(method, endpoint: Self.redirect(status, to: "/echo")),
                                               parameters: JSONParameters(["name": "tern"])).value
        #expect(echo.method == method.rawValue)
        #expect(String(decoding: echo.body, as: UTF8.self) == #"{"name":"tern"}"#)
        #expect(echo.header("Content-Type") == "application/json")
    }

    @Test func a307ReplaysAFileBody() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-redirect-\(UUID().uuidString).bin")
        let contents = patterned(bytes: 300_000, seed: 7)
        try contents.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let api = try TestAPI()
        let echo: MultipartEcho = try await api.request(route: api.post(endpoint: Self.redirect(307, to: "/multipart")),
                                                        parameters: MultipartParameters(parts: [Part(name: "file", fileURL: file)])).value
        #expect(echo.parts.first?.size == contents.count)
        #expect(echo.parts.first?.checksum == fnv1a(contents))
    }

    @Test func aLoopStopsAfterTheLimitWithATypedError() async throws {
        let other = try OtherOrigin()
        let api = try TestAPI(baseURL: other.baseURL, configuration: APIConfiguration(retryPolicy: .never, redirectPolicy: RedirectPolicy(maximumRedirects: 3)))
        guard let failure = await redirectFailure(api.request(route: api.get(endpoint: "/loop")) as Promise<Data>) else { return }
        #expect(failure.reason == .tooManyRedirects(limit: 3))
        #expect(failure.location == "/loop")
        #expect(failure.description.contains("maximumRedirects"))
        #expect(other.received.items.count == 4)
    }

    @Test func theDefaultFollowsTenRedirects() async throws {
        let api = try TestAPI()
        guard let failure = await redirectFailure(api.request(route: api.get(endpoint: "/loop")) as Promise<Data>) else { return }
        #expect(failure.reason == .tooManyRedirects(limit: 10))
    }

    @Test func neverMakesTheRedirectTheResponse() async throws {
        let api = try TestAPI(configuration: APIConfiguration(validation: Validation.statusCodes(200..<400), retryPolicy: .never, redirectPolicy: .never))
        let response: Response = try await api.request(route: api.get(endpoint: Self.redirect(302, to: "/echo"))).value
        #expect(response.statusCode == 302)
        #expect(response.headers["Location"] == "/echo")
        #expect(response.url?.path == "/redirect/302")
    }

    @Test func aRedirectNotFollowedFailsValidationByDefault() async throws {
        let api = try TestAPI()
        let error = await apiError(of: api.request(route: api.get(endpoint: Self.redirect(302, to: "/echo")),
                                                   options: RequestOptions(redirectPolicy: .never)) as Promise<Data>)
        guard case .unacceptableStatus(let failure)? = error else {
            Issue.record("expected unacceptableStatus, got \(String(describing: error))")
            return
        }
        #expect(failure.statusCode == 302)
    }

    @Test func aRedirectWithoutLocationIsTheResponse() async throws {
        let api = try TestAPI()
        let error = await apiError(of: api.request(route: api.get(endpoint: "/redirect/302")) as Promise<Data>)
        guard case .unacceptableStatus(let failure)? = error else {
            Issue.record("expected unacceptableStatus, got \(String(describing: error))")
            return
        }
        #expect(failure.statusCode == 302)
    }

    @Test(arguments: ["ftp://127.0.0.1/file", "http://", "javascript:alert(1)"])
    func aLocationThatIsNoHTTPURLFails(location: String) async throws {
        let api = try TestAPI()
        guard let failure = await redirectFailure(api.request(route: api.get(endpoint: Self.redirect(302, to: location))) as Promise<Data>) else { return }
        #expect(failure.reason == .invalidLocation)
        #expect(failure.location == location)
    }

    @Test func thePolicyDecidesEachRedirect() async throws {
        let other = try OtherOrigin()
        let seen = Recorder<(Int, Bool)>()
        let policy = RedirectPolicy { redirect in
            seen.append((redirect.number, redirect.isCrossOrigin))
            return redirect.isCrossOrigin ? .doNotFollow : .follow
        }
        let api = try TestAPI(configuration: APIConfiguration(validation: Validation.statusCodes(200..<400), retryPolicy: .never, redirectPolicy: policy))
        let away = Self.redirect(302, to: other.baseURL + "/echo")
        let response: Response = try await api.request(route: api.get(endpoint: Self.redirect(307, to: away))).value
        #expect(response.statusCode == 302)
        #expect(seen.items.map(\.0) == [1, 2])
        #expect(seen.items.map(\.1) == [false, true])
        #expect(other.received.items.isEmpty)
    }

    @Test func pluginsSeeEveryHop() async throws {
        let journal = PluginTests.Journal()
        let api = try TestAPI(configuration: APIConfiguration(retryPolicy: .never, plugins: [journal]))
        _ = try await (api.request(route: api.get(endpoint: Self.redirect(308, to: "/echo"))) as Promise<Echo>).value
        #expect(journal.entries.items == ["willSend /redirect/308", "didReceive 308", "willSend /echo", "didReceive 200"])
    }

    @Test func theTimeoutSpansEveryHop() async throws {
        let api = try TestAPI(configuration: APIConfiguration(timeout: 0.5, retryPolicy: .never))
        let error = await apiError(of: api.request(route: api.get(endpoint: Self.redirect(302, to: "/stall"))) as Promise<Data>)
        #expect(error?.caseName == "timeout")
    }

    @Test func aCallersSessionFollowsTernsRulesToo() async throws {
        let other = try OtherOrigin()
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let api = try TestAPI(configuration: APIConfiguration(commonHeaders: ["Authorization": "Bearer mine"], retryPolicy: .never),
                              transport: URLSessionTransport(session: session))
        let echo: Echo = try await api.request(route: api.get(endpoint: Self.redirect(302, to: other.baseURL + "/echo"))).value
        #expect(echo.header("Authorization") == nil)
    }

    // MARK: Scheme changes, against a transport that answers any URL

    /// Answers `https://secure.invalid/start` with a redirect to `location`, anything else with 204.
    static func redirectingTransport(to location: String) -> TransportTests.ScriptedTransport {
        TransportTests.ScriptedTransport { request in
            let url = request.urlRequest.url!
            let moved = url.path == "/start"
            let response = HTTPURLResponse(url: url, statusCode: moved ? 302 : 204, httpVersion: "HTTP/1.1",
                                           headerFields: moved ? ["Location": location] : [:])!
            return .success(TransportResponse(httpResponse: response, body: Data()))
        }
    }

    @Test func fromHTTPSToHTTPFailsByDefault() async throws {
        let transport = Self.redirectingTransport(to: "http://secure.invalid/next")
        let api = try TestAPI(baseURL: "https://secure.invalid", transport: transport)
        guard let failure = await redirectFailure(api.request(route: api.get(endpoint: "/start")) as Promise<Void>) else { return }
        #expect(failure.reason == .insecureRedirect)
        #expect(failure.description.contains("allowsInsecureRedirects"))
        #expect(transport.seen.items.count == 1)
    }

    @Test func fromHTTPSToHTTPWhenAllowedDropsCredentials() async throws {
        let transport = Self.redirectingTransport(to: "http://secure.invalid/next")
        let api = try TestAPI(baseURL: "https://secure.invalid", configuration: APIConfiguration(
            commonHeaders: ["Authorization": "Bearer t"], retryPolicy: .never, redirectPolicy: RedirectPolicy(allowsInsecureRedirects: true)
        ), transport: transport)
        try await (api.request(route: api.get(endpoint: "/start")) as Promise<Void>).value
        let sent = transport.seen.items
        #expect(sent.map { $0.url?.absoluteString } == ["https://secure.invalid/start", "http://secure.invalid/next"])
        #expect(sent.last?.value(forHTTPHeaderField: "Authorization") == nil)
    }

    @Test func fromHTTPToHTTPSIsAnotherOriginToo() async throws {
        let transport = Self.redirectingTransport(to: "https://secure.invalid/next")
        let api = try TestAPI(baseURL: "http://secure.invalid", configuration: APIConfiguration(
            commonHeaders: ["Authorization": "Bearer t"], retryPolicy: .never
        ), transport: transport)
        try await (api.request(route: api.get(endpoint: "/start")) as Promise<Void>).value
        #expect(transport.seen.items.last?.value(forHTTPHeaderField: "Authorization") == nil)
        #expect(transport.seen.items.count == 2)
    }
}
