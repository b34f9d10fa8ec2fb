import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An API's own key (`X-Api-Key`), named once as a sensitive header, where ``LoggerPlugin`` and
/// errors meet it: named by a request's own redirect policy only, signed by the delegate under
/// another case and rotated by a refresh, echoed by the server, carried by a request that
/// fails. The log (every level, the cURL line) and the error's words never hold its value.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CredentialHeaderLoggerAttackTests {
    typealias Origin = HTTPCacheTests.Origin

    func api(_ configuration: APIConfiguration) -> AbstractAPI {
        AbstractAPI(configuration: configuration, transport: TestTransport.make(), responseQueue: .global())
    }

    /// A header only the request's own `RequestOptions(redirectPolicy:)` names sensitive (the
    /// configuration names none) is a credential to the pipeline (the redirect drops it, the
    /// cache binds it, a recording hides it): the logger, the API's or the request's own,
    /// redacts it too, in the request's headers, its cURL line and the response's echo.
    @Test func aKeyOnlyTheRequestsOwnPolicyNamesIsRedacted() async throws {
        let key = "tenant-key-\(UUID().uuidString)"
        let origin = try Origin { request, _ in
            let echoed = CredentialHeaderAttack.header("x-tenant-key", in: request) ?? "none"
            return HTTPCacheTests.answer("ok", "X-Tenant-Key: \(echoed)\r\n")
        }
        let apiLines = Recorder<String>(), requestLines = Recorder<String>()
        let apiLogger = LoggerPlugin(level: .verbose, includesCURL: true) { apiLines.append($0) }
        let requestLogger = LoggerPlugin(level: .verbose, includesCURL: true) { requestLines.append($0) }
        let api = api(APIConfiguration(timeout: 20, retryPolicy: .never, plugins: [apiLogger]))
        let options = RequestOptions(headers: ["X-Tenant-Key": key], redirectPolicy: RedirectPolicy(sensitiveHeaders: ["x-tenant-key"]),
                                     plugins: [requestLogger])
        let response: Response = try await api.request(route: .get(origin.url + "/me"), options: options).value
        #expect(response.headers["X-Tenant-Key"] == key)   // the server did see and echo it
        for (who, lines) in [("the API's", apiLines), ("the request's", requestLines)] {
            let log = lines.items.joined(separator: "\n")
            #expect(log.contains("X-Tenant-Key: <redacted>"), "\(who) logger: \(log)")
            #expect(!log.contains(key), "\(who) logger printed the key: \(log)")
        }
    }

    /// The delegate signs under `X-API-KEY` what the configuration names `x-api-key`; the first
    /// key is refused (401), refreshed, and the second one refused for good (403): every line
    /// (sent, received, refreshed, failed) and the error's words hide both keys.
    @Test func aKeyTheDelegateSignsAndRotatesIsRedactedWhereverItGoes() async throws {
        let (old, new) = ("old-key-\(UUID().uuidString)", "new-key-\(UUID().uuidString)")
        let origin = try Origin { request, _ in
            let key = CredentialHeaderAttack.header("x-api-key", in: request) ?? "none"
            // The server echoes the key it was sent in a header of its own, under another case.
            return HTTPCacheTests.answer(#"{"error": "refused"}"#, status: key == old ? "401 Unauthorized" : "403 Forbidden",
                                         "x-API-key: \(key)\r\nContent-Type: application/json\r\n")
        }
        let lines = Recorder<String>()
        let logger = LoggerPlugin(level: .verbose, includesCURL: true) { lines.append($0) }
        let api = api(APIConfiguration(timeout: 20, retryPolicy: .never, redirectPolicy: RedirectPolicy(sensitiveHeaders: ["x-api-key"]),
                                       plugins: [logger]))
        let delegate = RotatingKeyDelegate(name: "X-API-KEY", keys: [old, new])
        api.delegate = delegate
        do {
            _ = try await api.request(route: .get(origin.url + "/me")).value
            Issue.record("a request the server refused succeeded")
        } catch let error as APIError {
            #expect(error.caseName == "unacceptableStatus", "\(error)")
            for words in ["\(error)", String(reflecting: error), error.localizedDescription] {
                #expect(![old, new].contains { words.contains($0) }, "the error names a key: \(words)")
            }
        }
        #expect(delegate.refreshes.withLock { $0 } == 1)
        #expect(origin.requests.items.compactMap { CredentialHeaderAttack.header("x-api-key", in: $0) } == [old, new])
        let log = lines.items.joined(separator: "\n")
        #expect(log.contains("⟳ credentials refreshed"), "\(log)")
        #expect(log.contains("← 403"), "\(log)")
        #expect(![old, new].contains { log.contains($0) }, "the log printed a key: \(log)")
    }

    /// The delegate signs with a key whose value HTTP forbids (a control character in it, as a
    /// key read from a damaged file would carry): the request fails before the wire, its error
    /// names the field and not the value, and the log neither.
    @Test(arguments: ["\u{01}", "\u{7F}", "\r\nX-Injected: 1"])
    func aKeyHTTPForbidsFailsWithoutItsValueInTheWords(tail: String) async throws {
        let key = "key-\(UUID().uuidString)"
        let origin = try Origin { _, _ in HTTPCacheTests.answer("ok") }
        let lines = Recorder<String>()
        let logger = LoggerPlugin(level: .verbose, includesCURL: true) { lines.append($0) }
        let api = api(APIConfiguration(timeout: 20, retryPolicy: .never, redirectPolicy: RedirectPolicy(sensitiveHeaders: ["x-api-key"]),
                                       plugins: [logger]))
        let delegate = RotatingKeyDelegate(keys: [key + tail])
        api.delegate = delegate
        let result = await (api.request(route: .get(origin.url + "/me")) as Promise<Response>).result
        switch result {
        case .success:
            // Foundation may drop such a value without a word: then the request went without it.
            #expect(origin.requests.items.allSatisfy { CredentialHeaderAttack.header("x-api-key", in: $0) == nil }, "\(origin.requests.items)")
            #expect(origin.requests.items.allSatisfy { !$0.contains("X-Injected") })
        case .failure(let error):
            #expect((error as? APIError)?.caseName == "invalidRequest", "\(error)")
            #expect(!"\(error)".contains(key), "\(error)")
            #expect(origin.count == 0)
        }
        #expect(!lines.items.joined(separator: "\n").contains(key), "\(lines.items)")
    }
}
