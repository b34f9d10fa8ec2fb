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

/// The cache against what an attacker, or the user's own tools, can do to its directory while
/// it runs, and against servers that play its features against each other.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CacheAttackTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-cache-\(UUID().uuidString)")
    let clock = TestClock()

    func response(_ cache: HTTPCache, _ url: URL, _ body: String) -> CachedResponse {
        CachedResponse(url: CacheKey.of(url), status: 200, headers: ["cache-control": "max-age=600"], body: Data(body.utf8),
                       requestDate: cache.now, responseDate: cache.now, varying: [:])
    }

    func file(of url: URL) -> URL {
        directory.appendingPathComponent(CacheStore.fileName(CacheKey.of(url)) + ".terncache")
    }

    // MARK: The directory changed under the cache

    /// A kept file replaced, while the cache runs, by a directory of the user's: looking it up,
    /// keeping another answer for its URL, and forgetting everything leave the directory and
    /// what it holds as they were (removed as an item, it went whole, with the user's files).
    @Test func aKeptFileReplacedByADirectoryIsNeverRemovedWithWhatItHolds() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = try HTTPCache(directory: directory, clock: clock)
        let urls = (0..<3).map { URL(string: "http://a.example/\($0)")! }
        for url in urls { cache.store(response(cache, url, "kept")) }
        for url in urls {
            let file = file(of: url)
            try FileManager.default.removeItem(at: file)
            try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
            try Data("the user's".utf8).write(to: file.appendingPathComponent("mine.txt"))
        }
        #expect(cache.response(for: URLRequest(url: urls[0]), trust: nil) == nil)
        cache.store(response(cache, urls[1], "kept again"))
        cache.removeAll()
        for url in urls {
            #expect((try? Data(contentsOf: file(of: url).appendingPathComponent("mine.txt"))) == Data("the user's".utf8), "\(url)")
        }
    }

    /// A kept file replaced by a named pipe, while the cache runs: looking it up answers
    /// nothing, at once (opened as a file, a pipe waits for a writer), and the pipe, not the
    /// cache's, is left where it is (it was removed).
    @Test func aKeptFileReplacedByAPipeIsNeitherWaitedOnNorRemoved() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = try HTTPCache(directory: directory, clock: clock)
        let url = URL(string: "http://a.example/piped")!
        cache.store(response(cache, url, "kept"))
        let file = file(of: url)
        try FileManager.default.removeItem(at: file)
        try #require(mkfifo(file.path, 0o600) == 0)
        let done = DispatchSemaphore(value: 0)
        let found = Recorder<CachedResponse?>()
        Thread.detachNewThread {
            found.append(cache.response(for: URLRequest(url: url), trust: nil))
            done.signal()
        }
        // Generous for a loaded machine; the lookup needs no network and no other thread.
        if done.wait(timeout: .now() + 10) == .timedOut {
            Issue.record("the lookup waited on the pipe")
            // Lets the lookup go: a writer that opens and closes the pipe.
            let writer = open(file.path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if writer >= 0 { close(writer) }
            done.wait()
        }
        #expect(found.items == [nil])
        var status = stat()
        #expect(lstat(file.path, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO)
    }

    /// A kept file replaced by a link to a device that never ends: looking it up answers
    /// nothing, at once, having read no more than the cache would ever write.
    @Test func aKeptFileReplacedByALinkToADeviceIsNotRead() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = try HTTPCache(directory: directory, maximumResponseBytes: 1_000, clock: clock)
        let url = URL(string: "http://a.example/device")!
        cache.store(response(cache, url, "kept"))
        let file = file(of: url)
        try FileManager.default.removeItem(at: file)
        // /dev/zero is a character device of size 0: under the largest file, it was read whole,
        // that is, until memory ran out. Not run before the fix for that reason.
        try FileManager.default.createSymbolicLink(atPath: file.path, withDestinationPath: "/dev/zero")
        #expect(cache.response(for: URLRequest(url: url), trust: nil) == nil)
    }

    // MARK: A request sent elsewhere than it was looked up for

    /// Sends requests for one origin to another once `moved` is set, as a failover adapter may.
    struct Mover: RequestAdapter {
        let moved: Recorder<Bool>
        let from: String
        let to: String

        func adapt(_ request: inout URLRequest) throws {
            guard moved.items.last == true, let url = request.url?.absoluteString, url.hasPrefix(from) else { return }
            request.url = URL(string: to + url.dropFirst(from.count))
        }
    }

    /// An adapter moves a request to another origin after the cache looked up what it keeps
    /// for the first: the cache's conditions, those of the first origin's response, do not go
    /// to the other, whose `304` then served the first origin's body as its answer, and set
    /// the kept response's freshness (here for a year) for the first origin too.
    @Test func aRequestAnAdapterMovesToAnotherOriginIsNotRevalidatedWithTheFirstOnesResponse() async throws {
        let first = try HTTPCacheTests.Origin { _, number in
            HTTPCacheTests.answer("first v\(number)", "ETag: \"e\"\r\nCache-Control: max-age=0\r\n")
        }
        let other = try HTTPCacheTests.Origin { request, _ in
            request.contains("If-None-Match") ? "HTTP/1.1 304 Not Modified\r\nCache-Control: max-age=31536000\r\n\r\n"
                : HTTPCacheTests.answer("other", "Cache-Control: no-store\r\n")
        }
        let moved = Recorder<Bool>()
        let cache = HTTPCache(clock: clock)
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never,
                                                              adapters: [Mover(moved: moved, from: first.url, to: other.url)], cache: cache),
                              transport: TestTransport.make(), responseQueue: .global())
        func get() async throws -> Response { try await api.request(route: .get(first.url + "/items")).value }
        #expect(String(decoding: try await get().body, as: UTF8.self) == "first v0")
        moved.append(true)
        let moving = try await get()
        #expect(String(decoding: moving.body, as: UTF8.self) == "other")
        #expect(!other.requests.items.contains { $0.contains("If-None-Match") })
        moved.append(false)
        // Back at the first origin, what it kept is still stale: asked of it again.
        _ = try await get()
        #expect(first.count == 2)
    }

    // MARK: Streams

    /// A `POST` read as a stream (as chat APIs answer one, with events) changes what the server
    /// has like any other: once it succeeds, the kept `GET` of its URL is not served again
    /// (RFC 9111, §4.4). Streams leave the cache aside, and left this too.
    @Test func anUnsafeStreamMakesTheCacheForgetItsURL() async throws {
        let origin = try HTTPCacheTests.Origin { request, number in
            request.hasPrefix("POST ") ? HTTPCacheTests.answer("data: posted\n\n", "Content-Type: text/event-stream\r\n")
                : HTTPCacheTests.answer("list v\(number)", "Cache-Control: max-age=600\r\n")
        }
        let cache = HTTPCache(clock: clock)
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: cache),
                              transport: TestTransport.make(), responseQueue: .global())
        func list() async throws -> Response { try await api.request(route: .get(origin.url + "/messages")).value }
        _ = try await list()
        #expect(try await list().cacheOutcome == .hit)
        var events: [String] = []
        for try await event in api.stream(route: .post(origin.url + "/messages")).events { events.append(event.data) }
        #expect(events == ["posted"])
        let after = try await list()
        #expect(after.cacheOutcome == .miss)
        #expect(String(decoding: after.body, as: UTF8.self) == "list v2")
    }

    /// A cache directory that is a link to another (as dotfiles and home directories moved to
    /// another disk often are): a cache opened there later finds what earlier ones kept, serves
    /// it, counts it against its limit and forgets it. Foundation lists such a link as empty:
    /// the files of every earlier run stayed, uncounted, and the directory grew without bound.
    @Test func aCacheDirectoryThatIsALinkFindsWhatEarlierRunsKept() async throws {
        let link = FileManager.default.temporaryDirectory.appendingPathComponent("tern-link-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: directory)
        defer {
            try? FileManager.default.removeItem(at: link)
            try? FileManager.default.removeItem(at: directory)
        }
        let origin = try HTTPCacheTests.Origin { _, number in HTTPCacheTests.answer("v\(number)", "Cache-Control: max-age=600\r\n") }
        func api(_ cache: HTTPCache) -> AbstractAPI {
            AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: cache), transport: TestTransport.make(), responseQueue: .global())
        }
        let first = try HTTPCache(directory: link, clock: clock)
        _ = try await api(first).request(route: .get(origin.url + "/x")).value as Response
        let later = try HTTPCache(directory: link, clock: clock)
        #expect(later.byteCount == first.byteCount && later.byteCount > 0)
        let kept: Response = try await api(later).request(route: .get(origin.url + "/x")).value
        #expect(kept.cacheOutcome == .hit)
        later.removeAll()
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    /// A response that varies on a field holding a key of the caller's (`X-API-Key`), kept on
    /// disk: the key is never written there, as no cookie or token is, and the response is
    /// served to that key only.
    @Test func aKeyAFieldVaryNamesHoldsIsNeverWritten() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try HTTPCacheTests.Origin { request, number in
            HTTPCacheTests.answer("v\(number)", "Cache-Control: max-age=600\r\nVary: X-API-Key\r\n")
        }
        let cache = try HTTPCache(directory: directory, clock: clock)
        func get(key: String) async throws -> Response {
            let api = AbstractAPI(configuration: APIConfiguration(commonHeaders: ["X-API-Key": key], timeout: 20, retryPolicy: .never, cache: cache),
                                  transport: TestTransport.make(), responseQueue: .global())
            return try await api.request(route: .get(origin.url + "/x")).value
        }
        _ = try await get(key: "sk_live_0123456789")
        #expect(try await get(key: "sk_live_0123456789").cacheOutcome == .hit)
        #expect(try await get(key: "sk_live_another").cacheOutcome == .miss)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(!names.isEmpty)
        for name in names {
            let contents = try Data(contentsOf: directory.appendingPathComponent(name))
            #expect(contents.range(of: Data("sk_live_".utf8)) == nil, "\(name)")
        }
    }
}
