import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One cache directory opened by several caches at once, as by two processes of the user's
/// (or two APIs each opening its own): APIs that differ in pins, in the authorities their
/// transport trusts, or in credentials. What one kept on disk answers another only if it was
/// fetched under the same trust and credentials: a fresh cache on the directory, which knows
/// the entries only from their files, tells them apart as the first did.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct SharedCacheDirectoryAttackTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-shared-cache-\(UUID().uuidString)")
    static let wrongPin = "sha256/" + Data(repeating: 7, count: 32).base64EncodedString()

    static func text(_ result: Result<Response, any Error>) -> String {
        switch result {
        case .success(let response): "\(String(decoding: response.body, as: UTF8.self))/\(response.cacheOutcome.map(\.rawValue) ?? "none")"
        case .failure(APIError.pinningFailed): "pinningFailed"
        case .failure(let error): "\(error)"
        }
    }

    #if os(Linux)
    @Test(.enabled(if: TestTransport.isCurl, "pins and private authorities are CurlTransport's on Linux"))
    func entriesFetchedUnderPinsOrAuthoritiesAnswerOnlyTheSameInAnotherCache() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (real, other) = (try TestCertificates(), try TestCertificates())
        let origin = try HTTPCacheTests.Origin { _, number in HTTPCacheTests.answer("data \(number)", "Cache-Control: max-age=600\r\n") }
        let relay = try TLSRelay(certificates: real, to: origin.server.port)
        defer { relay.stop() }
        let both = other.directory.appendingPathComponent("both.pem")
        try (Data(contentsOf: real.authority) + Data(contentsOf: other.authority)).write(to: both)
        let pin = try real.pin(ofKey: "server.key")
        /// A new cache on the directory each time: another process's.
        func get(pins: [String]?, trusting authority: URL) async throws -> String {
            let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never,
                                                                  certificatePins: try pins.map { try CertificatePins(["127.0.0.1": $0]) },
                                                                  cache: try HTTPCache(directory: directory)),
                                  transport: try CurlTransport(trusting: authority), responseQueue: .global())
            return Self.text(await (api.request(route: .get(relay.baseURL + "/data")) as Promise<Response>).result)
        }
        var outcomes = [try await get(pins: [pin], trusting: real.authority)]
        outcomes.append(try await get(pins: [pin], trusting: real.authority))
        outcomes.append(try await get(pins: [Self.wrongPin], trusting: real.authority))
        outcomes.append(try await get(pins: nil, trusting: real.authority))
        outcomes.append(try await get(pins: [pin], trusting: real.authority))
        outcomes.append(try await get(pins: nil, trusting: both))
        outcomes.append(try await get(pins: nil, trusting: real.authority))
        outcomes.append(try await get(pins: nil, trusting: real.authority))
        outcomes.append(try await get(pins: [pin, Self.wrongPin], trusting: real.authority))
        // One entry a URL: each answer fetched replaces the one before, and is served only under
        // the trust it was fetched under.
        #expect(outcomes == [
            "data 0/miss", "data 0/hit",
            "pinningFailed",          // never the kept answer, whatever the disk holds
            "data 1/miss",            // unpinned: not what was fetched under pins
            "data 2/miss",            // pinned: not what was fetched without
            "data 3/miss",            // other authorities
            "data 4/miss",            // these authorities: not what was fetched under others
            "data 4/hit",
            "data 5/miss",            // other pins (a backup added)
        ], "\(outcomes)")
    }
    #endif

    /// Credentials: what one account fetched is not what another gets from another cache on the
    /// same directory, whichever way the credential goes (a header, a cookie).
    @Test func entriesFetchedWithCredentialsAnswerOnlyTheSameInAnotherCache() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try HTTPCacheTests.Origin { request, number in
            let who = request.components(separatedBy: "\r\n").first { $0.hasPrefix("Authorization:") || $0.hasPrefix("Cookie:") } ?? "nobody"
            return HTTPCacheTests.answer("\(who) \(number)", "Cache-Control: public, max-age=600\r\n")
        }
        func get(_ headers: HTTPHeaders) async throws -> String {
            let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: try HTTPCache(directory: directory)),
                                  transport: TestTransport.make(), responseQueue: .global())
            return Self.text(await (api.request(route: .get(origin.url + "/me"), options: RequestOptions(headers: headers)) as Promise<Response>).result)
        }
        let outcomes = [
            try await get(["Authorization": "Bearer alice"]),
            try await get(["Authorization": "Bearer alice"]),
            try await get(["Authorization": "Bearer bob"]),
            try await get(["Authorization": "Bearer alice"]),
            try await get(["Cookie": "session=alice"]),
            try await get(["Cookie": "session=alice"]),
            try await get(["Cookie": "session=bob"]),
            try await get(["Authorization": "Bearer bob"]),
        ]
        // One entry a URL: each answer fetched replaces the one before, and answers only the same
        // credentials. (One fetched without any answers anyone, as CachingResponses says.)
        #expect(outcomes == [
            "Authorization: Bearer alice 0/miss", "Authorization: Bearer alice 0/hit", "Authorization: Bearer bob 1/miss",
            "Authorization: Bearer alice 2/miss", "Cookie: session=alice 3/miss", "Cookie: session=alice 3/hit",
            "Cookie: session=bob 4/miss", "Authorization: Bearer bob 5/miss",
        ], "\(outcomes)")
    }
}
