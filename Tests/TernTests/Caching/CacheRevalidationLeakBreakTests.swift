import Foundation
import Testing
@testable import Tern
import TernTesting

/// A request the cache revalidates (its kept response sent with `If-None-Match`) keeps its API
/// and transport alive for good, whatever the answer: a 304 that serves the kept body, a new
/// 200, or none before the request times out. The revalidation's task
/// (`CacheStage.send`, a `ReplaceableTask`) holds the transport's task, which holds its
/// `CachingReceiver`, whose `resend` closure holds the `ReplaceableTask` again: a cycle, and
/// through the receiver, the request, its API and the transport. An answer from the cache
/// without revalidation, and one not kept at all, let both go.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CacheRevalidationLeakBreakTests {
    enum Revalidation: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case notModified, modified, timedOut
        var testDescription: String { rawValue }
    }

    @Test(arguments: Revalidation.allCases) func aRevalidatedRequestLetsItsAPIAndTransportGo(_ revalidation: Revalidation) async throws {
        let server = try LoopbackServer { request in
            guard request.headers["If-None-Match"] == "\"r1\"" else {
                return ServerResponse(headers: ["ETag": "\"r1\"", "Cache-Control": "no-cache"], body: Data("kept".utf8))
            }
            switch revalidation {
            case .notModified: return ServerResponse(status: 304, headers: ["ETag": "\"r1\"", "Cache-Control": "no-cache"])
            case .modified: return ServerResponse(headers: ["ETag": "\"r2\"", "Cache-Control": "no-cache"], body: Data("new".utf8))
            case .timedOut: return ServerResponse(status: 304, headers: ["ETag": "\"r1\""]).with(.delayed(3))
            }
        }
        defer { server.stop() }
        let apiGone: WeakRef<AbstractAPI>
        let transportGone = AfterTheEndRaceTests.WeakTransport()
        do {
            let transport = try #require(TestTransport.make() as? any Transport & AnyObject)
            let api = AbstractAPI(configuration: APIConfiguration(timeout: revalidation == .timedOut ? 1 : 10, retryPolicy: .never, cache: HTTPCache()),
                                  transport: transport, responseQueue: .global())
            apiGone = WeakRef(api)
            transportGone.transport = transport
            // Time enough however busy the machine: only the revalidation may time out.
            let first: String = try await api.request(route: .get(server.baseURL + "/kept"), options: RequestOptions(timeout: 30)).value
            #expect(first == "kept")
            let second: Result<String, any Error> = await api.request(route: .get(server.baseURL + "/kept")).result
            switch (revalidation, second) {
            case (.notModified, .success("kept")), (.modified, .success("new")), (.timedOut, .failure(APIError.timeout)): break
            default: Issue.record("\(revalidation): \(second)")
            }
        }
        #expect(await eventually(timeout: 10) { apiGone.isFreed }, "the API outlived a revalidated request")
        #expect(await eventually(timeout: 10) { transportGone.transport == nil }, "the transport outlived its API")
    }
}
