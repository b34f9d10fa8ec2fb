import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response that varies on a field an adapter sets (`Vary: Accept-Language`, the language an
/// app's locale adapter adds to every request), with an `ETag`, gone stale.
///
/// Promised (`HTTPCache`): once a kept response is stale, the cache asks the server whether it
/// is still good (`If-None-Match`, `If-Modified-Since`), and a `304` refreshes it
/// (`CacheOutcome.revalidated`). The conditions are added before adapters and the delegate run
/// (`CacheStage.prepareRevalidation`, called first in `RequestExecution.attempt`), and the
/// kept response is matched there against the request as it is then, without the field the
/// adapter adds later: its `Vary` value differs, nothing is prepared, and the request, which
/// does match it once adapted, goes unconditionally. The server could never answer `304`:
/// every request after the response went stale downloaded the whole body again, a `miss`.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct AdaptedVaryRevalidationAttackTests {
    struct French: RequestAdapter {
        func adapt(_ request: inout URLRequest) throws { request.setValue("fr", forHTTPHeaderField: "Accept-Language") }
    }

    @Test func aResponseThatVariesOnAnAdaptedFieldIsRevalidated() async throws {
        let requests = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                requests.append(request)
                let answer = request.contains("\r\nIf-None-Match: \"v1\"")
                    ? "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nCache-Control: max-age=10\r\nVary: Accept-Language\r\n\r\n"
                    : RawServer.Connection.response("bonjour", headers: "ETag: \"v1\"\r\nCache-Control: max-age=10\r\nVary: Accept-Language\r\n")
                guard connection.send(answer) else { return }
            }
        }
        defer { server.stop() }
        let clock = TestClock()
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, adapters: [French()], cache: HTTPCache(clock: clock)),
                              transport: TestTransport.make(), responseQueue: .global())
        let url = server.baseURL + "/greeting"
        let first: Response = try await api.request(route: .get(url)).value
        #expect(String(decoding: first.body, as: UTF8.self) == "bonjour")
        let hit: Response = try await api.request(route: .get(url)).value
        #expect(hit.cacheOutcome == .hit)   // kept, and matched as adapted
        clock.advance(by: 20)
        let stale: Response = try await api.request(route: .get(url)).value
        #expect(String(decoding: stale.body, as: UTF8.self) == "bonjour")
        #expect(stale.cacheOutcome == .revalidated, "the stale response was \(stale.cacheOutcome.map { "\($0)" } ?? "?")")
        #expect(requests.items.last?.contains("\r\nIf-None-Match: \"v1\"") == true, "asked without conditions:\n\(requests.items.last ?? "")")
    }
}
