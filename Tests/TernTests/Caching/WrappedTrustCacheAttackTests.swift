import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The cache's trust meeting a transport that wraps another: a `RecordingTransport` recording
/// through `CurlTransport(trusting:)` a private authority. The docs (CachingResponses.md,
/// "Trust") promise: "a response fetched under certificate pins, or over a transport trusting
/// its own authorities (`CurlTransport(trusting:)`), answers only requests sent under the same
/// pins and authorities, and one fetched without them never answers a request that has them: an
/// API sharing a cache with a pinned one cannot hand it an answer its pins would have refused."
///
/// The cache stage read the authorities off the API's transport only when it *was* a
/// `CurlTransport`: behind a recorder, what was fetched from a server only the private authority
/// vouches for was kept as if under the system's trust, and answered an API on the system's
/// authorities, which would have refused that server. Each transport now says whose word its
/// answers carry (`KeyPinningTransport.trustMark`). Never a silently wrong answer.
///
/// The transports are given explicitly (libcurl), whatever `TERN_TEST_TRANSPORT` says: it fails
/// the same under both.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct WrappedTrustCacheAttackTests {
    #if os(Linux)
    /// Pinned or not, the answer recorded through the private authority is kept and then served
    /// to an API whose own transport trusts the system's authorities alone (the same pins, when
    /// pinned): it must fetch, and fail, as it would without the cache.
    @Test(arguments: [false, true])
    func anAnswerRecordedThroughAPrivateAuthorityNeverAnswersTheSystemsTrust(pinned: Bool) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attack90a-wrapped-trust-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let certificates = try TestCertificates()
        let origin = try HTTPCacheTests.Origin { _, number in HTTPCacheTests.answer("data \(number)", "Cache-Control: public, max-age=600\r\n") }
        let relay = try TLSRelay(certificates: certificates, to: origin.server.port)
        defer { relay.stop() }
        let pins = pinned ? try CertificatePins(["127.0.0.1": [try certificates.pin(ofKey: "server.key")]]) : nil
        let url = relay.baseURL + "/data"

        // The app's test run, recording through its private authority, on the app's cache folder.
        let recorder = try RecordingTransport(file: directory.appendingPathComponent("session.har"), mode: .record,
                                              upstream: CurlTransport(trusting: certificates.authority))
        let recording = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, certificatePins: pins,
                                                                    cache: try HTTPCache(directory: directory.appendingPathComponent("cache"))),
                                    transport: recorder, responseQueue: .global())
        #expect(SharedCacheDirectoryAttackTests.text(await (recording.request(route: .get(url)) as Promise<Response>).result) == "data 0/miss")

        // Control: the same request over the system's authorities, with no cache, is refused.
        let uncached = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, certificatePins: pins),
                                   transport: try CurlTransport(), responseQueue: .global())
        let refused = await (uncached.request(route: .get(url)) as Promise<Response>).result
        guard case .failure = refused else { Issue.record("the system's authorities trusted the test authority: \(refused)"); return }

        // The app itself, on the system's authorities, on the same cache folder.
        let app = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, certificatePins: pins,
                                                              cache: try HTTPCache(directory: directory.appendingPathComponent("cache"))),
                              transport: try CurlTransport(), responseQueue: .global())
        let answer = await (app.request(route: .get(url)) as Promise<Response>).result
        if case .success(let response) = answer {
            Issue.record("served \(String(decoding: response.body, as: UTF8.self)) (\(response.cacheOutcome.map(\.rawValue) ?? "none")), fetched from a server the system's authorities refuse (\(refused))")
        }
        #expect(origin.requests.items.count == 1)
    }

    /// Stubs have no server and no keys: "over `StubTransport` every pin passes" (Security.md).
    /// A pinned API on stubs that shares a cache folder with the app's pinned API keeps its
    /// made-up answer under the pins as though a server had shown the key, and the app, whose
    /// server is one the system's authorities refuse, is served the stub's body instead of failing.
    @Test func aStubsAnswerKeptUnderPinsNeverAnswersARealPinnedRequest() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attack90a-stub-trust-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let certificates = try TestCertificates()
        let origin = try HTTPCacheTests.Origin { _, number in HTTPCacheTests.answer("data \(number)", "Cache-Control: public, max-age=600\r\n") }
        let relay = try TLSRelay(certificates: certificates, to: origin.server.port)
        defer { relay.stop() }
        let pins = try CertificatePins(["127.0.0.1": [try certificates.pin(ofKey: "server.key")]])
        let url = relay.baseURL + "/data"
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/data", answers: .status(200, headers: ["Cache-Control": "public, max-age=600"], body: Data("made up".utf8))))
        let stubbed = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, certificatePins: pins,
                                                                  cache: try HTTPCache(directory: directory)),
                                  transport: stubs, responseQueue: .global())
        #expect(SharedCacheDirectoryAttackTests.text(await (stubbed.request(route: .get(url)) as Promise<Response>).result) == "made up/miss")
        let app = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, certificatePins: pins,
                                                              cache: try HTTPCache(directory: directory)),
                              transport: try CurlTransport(), responseQueue: .global())
        let answer = await (app.request(route: .get(url)) as Promise<Response>).result
        if case .success(let response) = answer {
            Issue.record("a pinned request over libcurl was served the stub's \(String(decoding: response.body, as: UTF8.self)) (\(response.cacheOutcome.map(\.rawValue) ?? "none"))")
        }
    }
    #endif
}
