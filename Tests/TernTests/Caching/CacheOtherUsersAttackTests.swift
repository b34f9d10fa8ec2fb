#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The disk cache on a machine with other users, who must not be able to choose its answers
/// (the cache takes any whole entry in its directory for its URL's, checksummed against
/// damage, not forgery):
/// - A directory the cache makes, under a permissive umask (0), is the user's alone: made as
///   Foundation makes one, it was writable by every user, who could plant entries in it.
/// - An entry in its directory that another user owns (a directory in `/tmp` made by someone
///   else first, a folder shared with a group) is never the answer, whether it was there when
///   the cache opened or put in an entry's place after.
/// On every transport.
// Each test but the exit tests has a time limit: an exit test waits its turn behind the others.
@Suite(.onTestThreads) struct CacheOtherUsersAttackTests {
    /// The test's own folder, removed when it ends.
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("tern-other-users-\(UUID().uuidString)")
    /// The cache's directory.
    var directory: URL { root.appendingPathComponent("cache") }
    /// The cache's clock, which the tests do not move.
    let clock = TestClock()

    /// The user `nobody`, who owns what another user planted (changing a file's owner takes root).
    static let otherUser: uid_t = 65534

    /// An API that keeps its answers in `cache`.
    func api(_ cache: HTTPCache) -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: cache), transport: TestTransport.make(), responseQueue: .global())
    }

    /// A whole entry answering `url` with `body`, fresh for ten minutes.
    static func entry(for url: URL, _ body: String) -> Data {
        CacheFile.encode(CachedResponse(url: CacheKey.of(url), status: 200, headers: ["cache-control": "max-age=600"], body: Data(body.utf8),
                                        requestDate: Date(), responseDate: Date(), varying: [:]))
    }

    #if os(Linux) && compiler(>=6.3)
    /// In a child process, whose umask alone is changed: the directories the cache makes on the
    /// way to its own, and its own, let no other user in.
    @Test(.exitTest) func theDirectoriesTheCacheMakesAreTheUsersAloneUnderAnyUmask() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                let manager = FileManager.default
                let folder = manager.temporaryDirectory.appendingPathComponent("tern-umask-cache-\(getpid())")
                defer { try? manager.removeItem(at: folder) }
                guard (try? manager.createDirectory(at: folder, withIntermediateDirectories: true)) != nil else { exit(2) }
                umask(0)
                guard (try? HTTPCache(directory: folder.appendingPathComponent("app/cache"))) != nil else { exit(3) }
                for path in ["app", "app/cache"] {
                    let mode = (try? manager.attributesOfItem(atPath: folder.appendingPathComponent(path).path)[.posixPermissions] as? Int) ?? -1
                    print("\(path) \(String(mode, radix: 8))")
                }
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(printed.split(separator: "\n") == ["app 700", "app/cache 700"], "\(printed)")
    }
    #endif

    @Test(.timeLimit(.minutes(2)), .enabled(if: getuid() == 0, "giving a file to another user takes root"))
    func anEntryAnotherUserPlantedBeforeTheCacheOpenedIsNeverTheAnswer() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let origin = try HTTPCacheTests.Origin { _, number in HTTPCacheTests.answer("server v\(number)", "Cache-Control: max-age=600\r\n") }
        let url = URL(string: origin.url + "/account")!
        let file = directory.appendingPathComponent(CacheStore.fileName(CacheKey.of(url)) + ".terncache")
        try Self.entry(for: url, "planted").write(to: file)
        try #require(chown(file.path, Self.otherUser, Self.otherUser) == 0)
        let api = api(try HTTPCache(directory: directory, clock: clock))
        let first: Response = try await api.request(route: .get(url.absoluteString)).value
        #expect(String(decoding: first.body, as: UTF8.self) == "server v0")
        #expect(first.cacheOutcome == .miss)
        let second: Response = try await api.request(route: .get(url.absoluteString)).value
        #expect(String(decoding: second.body, as: UTF8.self) == "server v0")
        #expect(origin.count == 1)
    }

    @Test(.timeLimit(.minutes(2)), .enabled(if: getuid() == 0, "giving a file to another user takes root"))
    func anEntryAnotherUserPutInAKeptEntrysPlaceIsNeverTheAnswer() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let origin = try HTTPCacheTests.Origin { _, number in HTTPCacheTests.answer("server v\(number)", "Cache-Control: max-age=600\r\n") }
        let url = URL(string: origin.url + "/account")!
        let cache = try HTTPCache(directory: directory, clock: clock)
        let api = api(cache)
        let first: Response = try await api.request(route: .get(url.absoluteString)).value
        #expect(first.cacheOutcome == .miss)
        let file = directory.appendingPathComponent(CacheStore.fileName(CacheKey.of(url)) + ".terncache")
        // Written beside, then renamed into the entry's place, as whoever may write the directory can.
        let planted = root.appendingPathComponent("planted")
        try Self.entry(for: url, "planted").write(to: planted)
        try #require(chown(planted.path, Self.otherUser, Self.otherUser) == 0)
        try #require(rename(planted.path, file.path) == 0)
        let second: Response = try await api.request(route: .get(url.absoluteString)).value
        #expect(String(decoding: second.body, as: UTF8.self) == "server v1")
        #expect(origin.count == 2)
        let third: Response = try await api.request(route: .get(url.absoluteString)).value
        #expect(String(decoding: third.body, as: UTF8.self) == "server v1")
        #expect(third.cacheOutcome == .hit)
    }
}
