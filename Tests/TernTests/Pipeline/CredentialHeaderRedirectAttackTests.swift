import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An API's own key, named once as a sensitive header, across redirects: named only by a
/// request's own policy (with a closure that follows every hop), added by an adapter or the
/// delegate under another case, on a 307 POST whose body goes on, under `.never`, and from https
/// to http where that is allowed. Two loopback servers (another port is another origin); the
/// key reaches only the origin, and no error names it.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CredentialHeaderRedirectAttackTests {
    typealias Origin = RedirectTests.OtherOrigin

    static func redirect(_ status: Int, to location: String) -> String { RedirectTests.redirect(status, to: location) }

    /// Whether `request` carries no key under any of the names tried here.
    static func keyless(_ request: RecordedRequest) -> Bool {
        ["X-Api-Key", "X-Tenant-Key"].allSatisfy { request.headers[$0] == nil }
    }

    func api(sensitive: Set<String> = [], headers: HTTPHeaders = [:], adapters: [any RequestAdapter] = []) -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(commonHeaders: headers, timeout: 20, retryPolicy: .never,
                                                    redirectPolicy: RedirectPolicy(sensitiveHeaders: sensitive), adapters: adapters),
                    transport: TestTransport.make(), responseQueue: .global())
    }

    /// The key is the request's own header, and only the request's own policy names it (its
    /// closure follows every hop, across origins): it goes to the origin, never to the other
    /// one, a 307 POST's body going on without it.
    @Test(arguments: [302, 307])
    func aKeyOnlyTheRequestsOwnPolicyNamesStaysHome(status: Int) async throws {
        let home = try Origin(), away = try Origin()
        let key = "tenant-\(UUID().uuidString)"
        let decided = Recorder<Bool>()
        let policy = RedirectPolicy(sensitiveHeaders: ["x-TENANT-key"]) { redirect in
            decided.append(redirect.isCrossOrigin)
            return .follow
        }
        let options = RequestOptions(headers: ["X-Tenant-Key": key], redirectPolicy: policy)
        let method: HTTPMethod = status == 307 ? .post : .get
        let route = Route(method: method, url: home.baseURL + Self.redirect(status, to: away.baseURL + "/echo"))
        let echo: Echo = try await api().request(route: route, parameters: status == 307 ? JSONParameters(["order": 7]) : nil, options: options).value
        #expect(echo.method == method.rawValue)
        if status == 307 { #expect(String(decoding: echo.body, as: UTF8.self).contains("\"order\"")) }
        #expect(decided.items == [true])
        #expect(home.received.items.first?.headers["X-Tenant-Key"] == key)
        #expect(away.received.items.count == 1)
        #expect(away.received.items.allSatisfy(Self.keyless), "\(away.received.items.map(\.headers))")
    }

    /// An adapter and the delegate each add a key under another case than the configuration
    /// names it; a chain to another port of the same host and back carries neither there or
    /// back, and the delegate is not asked to sign off its origin.
    @Test func keysAnAdapterAndTheDelegateAddStayHome() async throws {
        let home = try Origin(), away = try Origin()
        let (adapted, signed) = ("adapted-\(UUID().uuidString)", "signed-\(UUID().uuidString)")
        let api = api(sensitive: ["X-Api-Key", "x-tenant-key"], adapters: [KeyAdapter(name: "x-TENANT-KEY", key: adapted)])
        let delegate = RotatingKeyDelegate(name: "x-api-KEY", keys: [signed])
        api.delegate = delegate
        let back = away.baseURL + Self.redirect(308, to: home.baseURL + "/echo?back=1")
        let echo: Echo = try await api.request(route: .get(home.baseURL + Self.redirect(301, to: back))).value
        #expect(echo.query == "back=1")
        #expect(home.received.items.first?.headers["X-Tenant-Key"] == adapted)
        #expect(home.received.items.first?.headers["X-Api-Key"] == signed)
        #expect(away.received.items.count == 1)
        #expect(away.received.items.allSatisfy(Self.keyless), "\(away.received.items.map(\.headers))")
        let last = try #require(home.received.items.last)
        #expect(Self.keyless(last), "came back with \(last.headers)")
    }

    /// Under `.never` the 3xx is the answer: the other origin is asked nothing, and the error
    /// the default validation fails it with names no key.
    @Test func underNeverTheKeyGoesNowhereElseAndNoErrorNamesIt() async throws {
        let home = try Origin(), away = try Origin()
        let key = "key-\(UUID().uuidString)"
        let api = api(sensitive: ["X-Api-Key"], headers: ["X-Api-Key": key])
        let result = await (api.request(route: .get(home.baseURL + Self.redirect(302, to: away.baseURL + "/echo?key=" + key)),
                                        options: RequestOptions(redirectPolicy: .never)) as Promise<Response>).result
        switch result {
        case .success(let response): #expect(response.statusCode == 302)
        case .failure(let error):
            #expect((error as? APIError)?.caseName == "unacceptableStatus", "\(error)")
            // The URL it names is the one asked (which carries the key in its query, as the
            // caller wrote it); the key's header is not.
            #expect(!"\(error)".contains("X-Api-Key: \(key)"), "\(error)")
        }
        #expect(away.received.items.isEmpty)
        #expect(home.received.items.first?.headers["X-Api-Key"] == key)
    }

    #if os(Linux)
    /// From https to http, allowed by a request's own policy: the key the configuration names
    /// (the delegate's, and one among the common headers) is not sent over plain http.
    @Test(.enabled(if: TestTransport.isCurl, "FoundationNetworking cannot be told to trust the test's authority"))
    func fromHTTPSToHTTPTheKeyIsNotSentInClear() async throws {
        let plain = try Origin(), secure = try Origin()
        let certificates = try TestCertificates()
        let relay = try TLSRelay(certificates: certificates, to: try #require(URL(string: secure.baseURL)?.port))
        defer { relay.stop() }
        let (common, signed) = ("common-\(UUID().uuidString)", "signed-\(UUID().uuidString)")
        let api = AbstractAPI(configuration: APIConfiguration(commonHeaders: ["X-Tenant-Key": common], timeout: 30, retryPolicy: .never,
                                                              redirectPolicy: RedirectPolicy(sensitiveHeaders: ["x-api-key", "X-Tenant-Key"])),
                              transport: try CurlTransport(trusting: certificates.authority), responseQueue: .global())
        let delegate = RotatingKeyDelegate(name: "X-API-Key", keys: [signed])
        api.delegate = delegate
        let options = RequestOptions(redirectPolicy: RedirectPolicy(allowsInsecureRedirects: true))
        let echo: Echo = try await api.request(route: .get(relay.baseURL + Self.redirect(302, to: plain.baseURL + "/echo")), options: options).value
        #expect(echo.path == "/echo")
        #expect(secure.received.items.first?.headers["X-Api-Key"] == signed)
        #expect(secure.received.items.first?.headers["X-Tenant-Key"] == common)
        #expect(plain.received.items.count == 1)
        #expect(plain.received.items.allSatisfy(Self.keyless), "\(plain.received.items.map(\.headers))")
    }
    #endif
}
