import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting

/// Two caches on one directory ("Two caches may share a directory, in one process or two: each
/// reads what the other wrote, checked as any file is", CachingResponses.md) that keep answers
/// up to different sizes: an app's cache given `maximumResponseBytes` of 8 MiB for its
/// catalogue, its extension's left at the default 2 MiB. The app keeps a 4 MiB answer, whole and
/// intact. The extension, asking for the same URL, finds the file larger than it would ever
/// write (`CacheFile.read`'s `largest`), reads it as damaged, counts it so and deletes it
/// (`CacheStore.unreadable`): the app's good answer is gone, and the app fetches it again. A file
/// too large for one cache is not damage ("a damaged one is deleted"), and another cache's
/// intact file is not this one's to delete.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct SharedCacheLimitsAttackTests {
    typealias Origin = HTTPCacheTests.Origin
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-attack89a-cache-\(UUID().uuidString)")

    func api(_ cache: HTTPCache) -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: cache), transport: TestTransport.make(), responseQueue: .global())
    }

    @Test func anAnswerTooLargeForOneCacheIsNotDeletedAsDamagedFromTheOther() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let big = String(repeating: "catalogue ", count: 400_000)   // 4 MB
        let origin = try Origin { _, _ in RawServer.Connection.response(big, headers: "Cache-Control: max-age=600\r\n") }
        let appCache = try HTTPCache(directory: directory, maximumBytes: 64 << 20, maximumResponseBytes: 8 << 20)
        let app = api(appCache)
        let url = origin.url + "/catalogue"
        let first: Response = try await app.request(route: .get(url)).value
        #expect(first.body.count == big.utf8.count)
        let kept = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".terncache") }
        try #require(kept.count == 1)

        // The extension, opened now, asks for the same URL.
        let extensionCache = try HTTPCache(directory: directory)
        let answered: Response = try await api(extensionCache).request(route: .get(url)).value
        #expect(answered.body.count == big.utf8.count)
        #expect(extensionCache.corruptEntriesDropped == 0, "an intact answer of another cache's counted as damaged")
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent(kept[0]).path), "the app's kept answer was deleted")

        // The app still has its answer.
        let again: Response = try await app.request(route: .get(url)).value
        #expect(again.cacheOutcome == .hit, "\(again.cacheOutcome); the server was asked \(origin.requests.items.count) times")
    }
}
