import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An app in "offline, cache only" mode (`only-if-cached`, or `.returnCacheDataDontLoad`) sends
/// the requests a cache passes through untouched: a `POST`, a `GET` with a body, with a `Range`
/// or conditions of its own, a stream, a resumed download. The server counts what reaches it:
/// nothing may, and each request fails with a 504, as one for a URL nothing is kept for does.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct OfflinePassThroughAttackTests {
    typealias Origin = HTTPCacheTests.Origin

    /// The ways an app asks for only what is kept.
    enum Offline: CaseIterable, Sendable {
        case directive, policy

        var options: RequestOptions {
            switch self {
            case .directive: RequestOptions(cacheDirectives: CacheDirectives(onlyIfCached: true))
            case .policy: RequestOptions(cachePolicy: .returnCacheDataDontLoad)
            }
        }
    }

    /// The requests a cache passes through.
    enum Passed: CaseIterable, Sendable {
        case post, getWithBody, ownRange, ownCondition
    }

    static func api() -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: HTTPCache()),
                    transport: TestTransport.make(), responseQueue: .global())
    }

    static func expect504(_ result: Result<some Any, some Error>, _ what: String) {
        guard case .failure(let error as APIError) = result, case .unacceptableStatus = error, error.statusCode == 504 else {
            Issue.record("\(what): expected a 504, got \(result)")
            return
        }
    }

    @Test(arguments: Passed.allCases, Offline.allCases)
    func aRequestTheCachePassesNeverReachesTheServer(_ passed: Passed, _ offline: Offline) async throws {
        let origin = try Origin { _, _ in HTTPCacheTests.answer("online", "Cache-Control: max-age=600\r\n") }
        let api = Self.api()
        let url = origin.url + "/items"
        let options = offline.options
        let promise: Promise<Response> = switch passed {
        case .post: api.request(route: .post(url), parameters: JSONParameters(["name": "x"]), options: options)
        case .getWithBody: api.request(route: .get(url), parameters: JSONParameters(["query": "x"]), options: options)
        case .ownRange: api.request(route: .get(url), parameters: ResumeLie.Headers(values: ["Range": "bytes=0-1"]), options: options)
        case .ownCondition: api.request(route: .get(url), parameters: ResumeLie.Headers(values: ["If-None-Match": "\"1\""]), options: options)
        }
        let result = await promise.result
        Self.expect504(result, "\(passed)")
        #expect(origin.count == 0, "\(origin.requests.items)")
    }

    @Test(arguments: Offline.allCases) func aStreamNeverReachesTheServer(_ offline: Offline) async throws {
        let origin = try Origin { _, _ in HTTPCacheTests.answer("data: online\n\n", "Content-Type: text/event-stream\r\n") }
        let api = Self.api()
        let result: Result<[Data], any Error>
        do {
            var chunks: [Data] = []
            for try await chunk in api.stream(route: .get(origin.url + "/events"), options: offline.options) { chunks.append(chunk) }
            result = .success(chunks)
        } catch {
            result = .failure(error)
        }
        Self.expect504(result, "stream")
        #expect(origin.count == 0, "\(origin.requests.items)")
    }

    /// A delegate whose token has expired (it asks for a refresh before every request from
    /// now on), and whose refresh, offline, fails.
    final class Expired: APIDelegate {
        let expired = Locked(false)
        let refreshes = Recorder<Int>()
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer old", forHTTPHeaderField: "Authorization")
        }
        func api(_ api: AbstractAPI, needsRefreshBeforeSending request: URLRequest) -> Bool { expired.withLock { $0 } }
        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            refreshes.append(1)
            return Promise(error: APIError.authentication(.refreshUnavailable), in: .global())
        }
    }

    /// Offline with a token that expired: the request is answered from what is kept (under the
    /// credentials it was fetched with), or with the 504, and no refresh goes to the network.
    @Test(arguments: Offline.allCases) func anOfflineRequestIsNotHeldForARefresh(_ offline: Offline) async throws {
        let origin = try Origin { _, _ in HTTPCacheTests.answer("kept", "Cache-Control: public, max-age=600\r\n") }
        let delegate = Expired()
        let api = Self.api()
        api.delegate = delegate
        let _: Response = try await api.request(route: .get(origin.url + "/feed")).value
        delegate.expired.withLock { $0 = true }
        let kept: Response = try await api.request(route: .get(origin.url + "/feed"), options: offline.options).value
        #expect(String(decoding: kept.body, as: UTF8.self) == "kept" && kept.cacheOutcome == .hit)
        Self.expect504(await (api.request(route: .get(origin.url + "/other"), options: offline.options) as Promise<Response>).result, "nothing kept")
        #expect(delegate.refreshes.items.isEmpty)
        #expect(origin.count == 1)
    }

    /// The partial file and its resume outlive the offline attempt: the download resumes once
    /// the app is online again.
    @Test(arguments: Offline.allCases) func aResumedDownloadNeverReachesTheServer(_ offline: Offline) async throws {
        let body = ResumeLie.body(1)
        let origin = try Origin { _, _ in HTTPCacheTests.answer("online") }
        let directory = try ResumeLie.Directory()
        let resume = try directory.resume(of: body, offset: 2000, from: origin.url + "/file")
        let api = Self.api()
        let offlineResult = await api.download(route: .get(origin.url + "/file"), to: directory.destination, resumingFrom: resume, options: offline.options).result
        Self.expect504(offlineResult, "download")
        #expect(origin.count == 0, "\(origin.requests.items)")
        #expect(ResumableDownload.pending(for: directory.destination) != nil)
        #expect(!FileManager.default.fileExists(atPath: directory.destination.path))
    }

    /// Refreshes for every 403, once `refreshing`.
    final class RefreshesFor403: APIDelegate {
        let refreshing = Locked(false)
        let refreshes = Recorder<Int>()
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {}
        func api(_ api: AbstractAPI, needsRefreshFor response: HTTPURLResponse, data: Data, request: URLRequest) -> Bool {
            response.statusCode == 403 && refreshing.withLock { $0 }
        }
        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            refreshes.append(1)
            return Promise(error: APIError.authentication(.refreshUnavailable), in: .global())
        }
    }

    /// A kept 403, answered offline: the delegate's refresh for a 403 would go to the network;
    /// the request fails with the 403 instead.
    @Test(arguments: Offline.allCases) func aKeptAnswerIsNotRefreshedForOffline(_ offline: Offline) async throws {
        let origin = try Origin { _, _ in "HTTP/1.1 403 Forbidden\r\nCache-Control: public, max-age=600\r\nContent-Length: 6\r\n\r\nbanned" }
        let delegate = RefreshesFor403()
        let api = Self.api()
        api.delegate = delegate
        _ = await (api.request(route: .get(origin.url + "/admin")) as Promise<Response>).result
        delegate.refreshing.withLock { $0 = true }
        let result = await (api.request(route: .get(origin.url + "/admin"), options: offline.options) as Promise<Response>).result
        guard case .failure(let error as APIError) = result, case .unacceptableStatus = error, error.statusCode == 403 else {
            Issue.record("expected the kept 403, got \(result)")
            return
        }
        #expect(delegate.refreshes.items.isEmpty)
        #expect(origin.count == 1)
    }
}
