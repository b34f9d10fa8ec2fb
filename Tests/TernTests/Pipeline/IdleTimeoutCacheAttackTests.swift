import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting

/// The idle timeout where it meets the ``HTTPCache``, over the test's transport. As OkHttp's
/// cache does with a read timeout, a revalidation that stalls fails the request (retried as the
/// policy says): the stale response is not served in its place, and stays kept as it was; a
/// response that stalls is never kept in part.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct IdleTimeoutCacheAttackTests {
    typealias Seam = MetricsSeamAttackTests
    typealias Seams = IdleTimeoutSeamAttackTests

    static let idle: TimeInterval = 0.3

    static func api(retries: Int, cache: HTTPCache) -> AbstractAPI {
        let policy = retries > 0 ? RetryPolicy(maxRetries: retries, baseDelay: 0.01, jitter: false) : .never
        return AbstractAPI(configuration: APIConfiguration(timeout: 20, idleTimeout: idle, retryPolicy: policy, cache: cache),
                           transport: TestTransport.make(), responseQueue: .global())
    }

    /// How a conditional request's answer goes wrong.
    enum Stall: String, CaseIterable, Sendable {
        /// The `304` never comes.
        case noAnswer
        /// A `200` with another body and tag comes in part, then nothing.
        case newBodyInPart
    }

    /// The first answer is kept (`no-cache`: asked again every time, `"v1"`); the first
    /// revalidation stalls as `stall` says; later ones are answered `304`. Without a retry the
    /// request fails as idle, nothing stale served; with one, the retry revalidates and the kept
    /// body comes. Either way the kept response is still `"v1"`'s, which the next request revalidates.
    @Test(arguments: Stall.allCases, [0, 1])
    func aRevalidationThatStallsServesNothingStale(stall: Stall, retries: Int) async throws {
        let heads = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                heads.append(request)
                guard let condition = Seams.field("If-None-Match", of: request) else {
                    guard connection.send("HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nCache-Control: no-cache\r\nContent-Length: 4\r\n\r\nkept") else { return }
                    continue
                }
                guard heads.items.count > 2 else {
                    if stall == .newBodyInPart {
                        _ = connection.send("HTTP/1.1 200 OK\r\nETag: \"v2\"\r\nCache-Control: max-age=600\r\nContent-Length: 9\r\n\r\nnew")
                    }
                    return Seams.stall(connection)
                }
                guard connection.send("HTTP/1.1 304 Not Modified\r\nETag: \(condition)\r\nCache-Control: no-cache\r\n\r\n") else { return }
            }
        }
        defer { server.stop() }
        let api = Self.api(retries: retries, cache: HTTPCache())
        let url = server.baseURL + "/thing"
        let first: Response = try await api.request(route: .get(url)).value
        #expect(first.cacheOutcome == .miss)
        let second: Result<Response, any Error> = await api.request(route: .get(url)).result
        if retries == 0 {
            #expect(IdleTimeoutTests.isIdle(second.failure as? APIError), "\(second)")
        } else {
            let response = try second.get()
            #expect(String(decoding: response.body, as: UTF8.self) == "kept")
            #expect(response.cacheOutcome == .revalidated)
        }
        let third: Response = try await api.request(route: .get(url)).value
        #expect(String(decoding: third.body, as: UTF8.self) == "kept")
        #expect(third.cacheOutcome == .revalidated)
        let conditions = heads.items.map { Seams.field("If-None-Match", of: $0) ?? "-" }
        #expect(conditions == ["-"] + Array(repeating: "\"v1\"", count: 2 + retries))
    }

    /// A fresh response (`max-age=600`) that stalls after 3 of its 10 bytes is not kept: the
    /// next request goes to the server, without conditions, and the one after is answered from
    /// what that kept.
    @Test func aResponseThatStallsIsNeverKeptInPart() async throws {
        let heads = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                heads.append(request)
                let head = "HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nCache-Control: max-age=600\r\nContent-Length: 10\r\n\r\n"
                guard heads.items.count > 1 else {
                    _ = connection.send(head + "012")
                    return Seams.stall(connection)
                }
                guard connection.send(head + "0123456789") else { return }
            }
        }
        defer { server.stop() }
        let api = Self.api(retries: 0, cache: HTTPCache())
        let url = server.baseURL + "/thing"
        let stalled: Result<Response, any Error> = await api.request(route: .get(url)).result
        #expect(IdleTimeoutTests.isIdle(stalled.failure as? APIError), "\(stalled)")
        let second: Response = try await api.request(route: .get(url)).value
        #expect(String(decoding: second.body, as: UTF8.self) == "0123456789")
        #expect(second.cacheOutcome == .miss)
        let third: Response = try await api.request(route: .get(url)).value
        #expect(String(decoding: third.body, as: UTF8.self) == "0123456789")
        #expect(third.cacheOutcome == .hit)
        #expect(heads.items.count == 2)
        #expect(heads.items.map { Seams.field("If-None-Match", of: $0) } == [nil, nil])
    }
}

extension Result {
    /// The failure, if it is one.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
