import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting

/// Two caches on one directory ("Two caches may share a directory, in one process or two: each
/// reads what the other wrote", CachingResponses.md): an app and its extension, a command-line
/// tool run twice, two APIs of one app each given an `HTTPCache` on the app's caches folder.
/// One API deletes (or changes) an item that the other API's cache keeps, fresh: RFC 9111 §4.4,
/// as Tern's cache does within one cache ("CacheRules.invalidated"), forgets what is kept for
/// the URL an unsafe request changed. The kept file is the directory's, which both caches read;
/// but a cache forgets only what its own index holds (`CacheStore.remove`), and a cache opened
/// before the other kept the item has no entry for it: the file stays, and the other API goes
/// on answering with the item as it was before the delete, for as long as it is fresh. Opened
/// the other way round (the second case, which passes) the file goes, and the other cache,
/// finding it gone, asks the server. Never a silently wrong answer: the delete's effect must not
/// depend on which cache opened first.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct SharedCacheInvalidationAttackTests {
    typealias Origin = HTTPCacheTests.Origin
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-attack89a-cache-\(UUID().uuidString)")

    func api(_ cache: HTTPCache) -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: cache), transport: TestTransport.make(), responseQueue: .global())
    }

    @Test(arguments: [true, false]) func aDeleteThroughOneCacheIsSeenThroughTheOther(deleterOpenedFirst: Bool) async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let deleted = Locked(false)
        let origin = try Origin { request, _ in
            if request.hasPrefix("DELETE ") {
                deleted.withLock { $0 = true }
                return RawServer.Connection.response("", status: "204 No Content")
            }
            return deleted.withLock { $0 } ? RawServer.Connection.response("gone", status: "404 Not Found")
                : RawServer.Connection.response("the item", headers: "Cache-Control: max-age=600\r\n")
        }
        let url = origin.url + "/items/1"
        var deleter: HTTPCache?
        if deleterOpenedFirst { deleter = try HTTPCache(directory: directory) }
        let reader = try HTTPCache(directory: directory)
        let readingAPI = api(reader)
        let first: Response = try await readingAPI.request(route: .get(url)).value
        #expect(String(decoding: first.body, as: UTF8.self) == "the item")
        if deleter == nil { deleter = try HTTPCache(directory: directory) }
        let deletingAPI = api(try #require(deleter))
        _ = try await deletingAPI.request(route: .delete(url)).value as Response
        #expect(deleted.withLock { $0 })

        // The item is gone: the reading API must not answer with it from what it kept.
        let after = await (readingAPI.request(route: .get(url)) as Promise<Response>).result
        switch after {
        case .success(let response):
            Issue.record("answered \(response.cacheOutcome) with \"\(String(decoding: response.body, as: UTF8.self))\" after the item was deleted through the other cache")
        case .failure(let error):
            #expect("\(error)".contains("404"), "\(error)")
        }
        withExtendedLifetime((readingAPI, deletingAPI)) {}
    }
}
