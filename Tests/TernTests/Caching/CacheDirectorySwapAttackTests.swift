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

/// The disk cache's directory changed underneath a running API: swapped for a link to a
/// directory of the user's between a store and a read, during a revalidation, while a download
/// or a stream runs; replaced by a file of the user's; removed; and a directory into which
/// another process planted entries before the cache opened. Every request gets its own answer
/// from the server (or the cache's own), and every file of the user's keeps its bytes. On every
/// transport.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct CacheDirectorySwapAttackTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("tern-swap-\(UUID().uuidString)")
    var directory: URL { root.appendingPathComponent("cache") }
    var users: URL { root.appendingPathComponent("users") }
    var movedAside: URL { root.appendingPathComponent("cache-moved") }
    let clock = TestClock()

    /// The user's files, by path under `users`.
    static let usersFiles: [String: Data] = [
        "notes.txt": Data("my notes".utf8),
        ".profile": Data("export PATH=$HOME/bin:$PATH".utf8),
        "photos/beach.jpg": Data(repeating: 0xFF, count: 5_000),
        "report.terncache.txt": Data("named almost as the cache's files".utf8),
    ]

    func makeUsersFiles() throws {
        for (path, contents) in Self.usersFiles {
            let file = users.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try contents.write(to: file)
        }
    }

    /// Every regular file under `base`, links not followed, by path relative to it.
    static func tree(_ base: URL) -> [String: Data] {
        var found: [String: Data] = [:]
        func walk(_ directory: URL, _ prefix: String) {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] {
                let path = directory.appendingPathComponent(name)
                var status = stat()
                guard lstat(path.path, &status) == 0 else { continue }
                switch status.st_mode & S_IFMT {
                case S_IFDIR: walk(path, prefix + name + "/")
                case S_IFREG: found[prefix + name] = (try? Data(contentsOf: path)) ?? Data("unreadable".utf8)
                default: found[prefix + name] = Data("not a regular file".utf8)
                }
            }
        }
        walk(base, "")
        return found
    }

    /// Moves the cache's directory aside and puts a link to the user's directory in its place.
    func swapForLinkToUsers() throws {
        try FileManager.default.moveItem(at: directory, to: movedAside)
        try FileManager.default.createSymbolicLink(at: directory, withDestinationURL: users)
    }

    func api(_ cache: HTTPCache) -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, cache: cache), transport: TestTransport.make(), responseQueue: .global())
    }

    static func text(_ response: Response) -> String { String(decoding: response.body, as: UTF8.self) }

    /// The path of a request's head, from its first line.
    static func path(of request: String) -> String {
        String(request.split(separator: " ").dropFirst().first ?? "")
    }

    // MARK: Swapped for a link to the user's directory

    /// The directory swapped for a link to the user's between stores and reads: what was kept
    /// is not found there, so each request is answered by the server with its own answer; what
    /// is kept after goes into the user's directory beside their files, and forgetting it
    /// removes exactly that, leaving the user's directory as it was, and the directory moved
    /// aside as it was.
    @Test func aDirectorySwappedForALinkBetweenAStoreAndAReadGetsTheServersAnswers() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        try makeUsersFiles()
        let origin = try HTTPCacheTests.Origin { request, number in
            HTTPCacheTests.answer("\(Self.path(of: request)) v\(number)", "Cache-Control: max-age=600\r\nETag: \"\(number)\"\r\n")
        }
        let cache = try HTTPCache(directory: directory, clock: clock)
        let api = api(cache)
        func get(_ path: String) async throws -> Response { try await api.request(route: .get(origin.url + path)).value }
        #expect(Self.text(try await get("/a")) == "/a v0")
        #expect(Self.text(try await get("/b")) == "/b v1")
        #expect(try await get("/a").cacheOutcome == .hit)
        let keptBefore = Self.tree(directory)
        #expect(keptBefore.count == 2)

        try swapForLinkToUsers()
        let a = try await get("/a")
        #expect(a.cacheOutcome == .miss && Self.text(a) == "/a v2")
        let again = try await get("/a")
        #expect(again.cacheOutcome == .hit && Self.text(again) == "/a v2")
        let c = try await get("/c")
        #expect(c.cacheOutcome == .miss && Self.text(c) == "/c v3")
        // A POST to /b forgets /b, which the user's directory never held.
        let _: Response = try await api.request(route: .post(origin.url + "/b")).value
        let b = try await get("/b")
        #expect(b.cacheOutcome == .miss && Self.text(b) == "/b v5")
        #expect(Self.tree(users).filter { Self.usersFiles[$0.key] != nil } == Self.usersFiles)
        cache.removeAll()
        #expect(Self.tree(users) == Self.usersFiles)
        #expect(Self.tree(movedAside) == keptBefore)
        #expect(cache.corruptEntriesDropped == 0)
    }

    /// The directory swapped for a link to the user's while a revalidation waits for its `304`:
    /// the answer is the kept body, revalidated (read before the swap). The kept file is no
    /// longer there, so the `304` updates nothing (as after another cache on the directory
    /// forgot it): the next request goes to the server, and its answer is kept in the new
    /// place; forgetting it leaves the user's files as they were.
    @Test func aDirectorySwappedDuringARevalidationAnswersWithTheKeptBody() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        try makeUsersFiles()
        let arrived = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let origin = try HTTPCacheTests.Origin { request, number in
            guard request.contains("If-None-Match: \"kept\"") else {
                return HTTPCacheTests.answer("kept body", "Cache-Control: max-age=0\r\nETag: \"kept\"\r\n")
            }
            arrived.signal()
            _ = proceed.wait(timeout: .now() + 60)
            return "HTTP/1.1 304 Not Modified\r\nCache-Control: max-age=600\r\nETag: \"kept\"\r\n\r\n"
        }
        let cache = try HTTPCache(directory: directory, clock: clock)
        let api = api(cache)
        let first: Response = try await api.request(route: .get(origin.url + "/doc")).value
        #expect(Self.text(first) == "kept body")
        let pending: Promise<Response> = api.request(route: .get(origin.url + "/doc"))
        try #require(arrived.wait(timeout: .now() + 60) == .success)
        try swapForLinkToUsers()
        proceed.signal()
        let revalidated = try await pending.value
        #expect(revalidated.cacheOutcome == .revalidated && Self.text(revalidated) == "kept body")
        let fetched: Response = try await api.request(route: .get(origin.url + "/doc")).value
        #expect(fetched.cacheOutcome == .miss && Self.text(fetched) == "kept body")
        #expect(origin.count == 3)
        cache.removeAll()
        #expect(Self.tree(users) == Self.usersFiles)
    }

    /// A server that sends half of a cacheable body, waits for the test, then the rest.
    static func halting(_ body: [UInt8], arrived: DispatchSemaphore, proceed: DispatchSemaphore) throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let head = "HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\nCache-Control: max-age=600\r\n\r\n"
                guard connection.send(head), connection.send(Array(body[..<(body.count / 2)])) else { return }
                if request.hasPrefix("GET /halting") {
                    arrived.signal()
                    _ = proceed.wait(timeout: .now() + 60)
                }
                guard connection.send(Array(body[(body.count / 2)...])) else { return }
            }
        }
    }

    /// The directory swapped for a link to the user's while a download runs: the file is the
    /// whole body, kept in the new place (and served from there to the next download), and
    /// forgetting it leaves the user's files as they were.
    @Test func aDirectorySwappedWhileADownloadRunsWritesTheWholeFile() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        try makeUsersFiles()
        let body = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let (arrived, proceed) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let server = try Self.halting(body, arrived: arrived, proceed: proceed)
        defer { server.stop() }
        let cache = try HTTPCache(directory: directory, clock: clock)
        let api = api(cache)
        // Something kept before the swap, for the directory to have a file of the cache's.
        let _: Response = try await api.request(route: .get(server.baseURL + "/before")).value
        let downloads = root.appendingPathComponent("downloads")
        try FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
        let pending = api.download(route: .get(server.baseURL + "/halting"), to: downloads.appendingPathComponent("first"))
        try #require(arrived.wait(timeout: .now() + 60) == .success)
        try swapForLinkToUsers()
        proceed.signal()
        let file = try await pending.value
        #expect(try Data(contentsOf: file.fileURL) == Data(body))
        let second = try await api.download(route: .get(server.baseURL + "/halting"), to: downloads.appendingPathComponent("second")).value
        #expect(try Data(contentsOf: second.fileURL) == Data(body))
        #expect(server.connections >= 1)
        cache.removeAll()
        #expect(Self.tree(users) == Self.usersFiles)
    }

    /// The directory swapped for a link to the user's while a stream of lines runs, its
    /// server waiting between halves: every line comes, in order, and the user's files stay.
    @Test func aDirectorySwappedWhileAStreamRunsReadsEveryLine() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        try makeUsersFiles()
        let body = Array((0..<2_000).map { "line \($0)\n" }.joined().utf8)
        let (arrived, proceed) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let server = try Self.halting(body, arrived: arrived, proceed: proceed)
        defer { server.stop() }
        let cache = try HTTPCache(directory: directory, clock: clock)
        let api = api(cache)
        let _: Response = try await api.request(route: .get(server.baseURL + "/before")).value
        let swapper = Thread {
            if arrived.wait(timeout: .now() + 60) == .success { try? swapForLinkToUsers() }
            proceed.signal()
        }
        swapper.start()
        var lines: [String] = []
        for try await line in api.stream(route: .get(server.baseURL + "/halting")).lines { lines.append(line) }
        #expect(lines == (0..<2_000).map { "line \($0)" })
        #expect(FileManager.default.fileExists(atPath: movedAside.path))
        cache.removeAll()
        #expect(Self.tree(users) == Self.usersFiles)
    }

    // MARK: Replaced by a file, removed

    /// The directory replaced, while the cache runs, by a regular file of the user's, and then
    /// removed altogether: each request is answered by the server, nothing is written through
    /// the file or beside it, and the file keeps its bytes whatever the cache looks up, keeps
    /// or forgets.
    @Test func aDirectoryReplacedByAFileOrRemovedLeavesEveryRequestItsOwnAnswer() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let origin = try HTTPCacheTests.Origin { request, number in
            HTTPCacheTests.answer("\(Self.path(of: request)) v\(number)", "Cache-Control: max-age=600\r\n")
        }
        let cache = try HTTPCache(directory: directory, clock: clock)
        let api = api(cache)
        func get(_ path: String) async throws -> Response { try await api.request(route: .get(origin.url + path)).value }
        _ = try await get("/a")
        _ = try await get("/b")
        try FileManager.default.removeItem(at: directory)
        let mine = Data("the user's file, where the cache was".utf8)
        try mine.write(to: directory)
        let a = try await get("/a")
        #expect(a.cacheOutcome == .miss && Self.text(a) == "/a v2")
        let c = try await get("/c")
        #expect(c.cacheOutcome == .miss && Self.text(c) == "/c v3")
        let c2 = try await get("/c")
        #expect(c2.cacheOutcome == .miss && Self.text(c2) == "/c v4")
        let _: Response = try await api.request(route: .delete(origin.url + "/b")).value
        cache.removeAll()
        #expect(try Data(contentsOf: directory) == mine)
        #expect(Self.tree(root) == ["cache": mine])

        try FileManager.default.removeItem(at: directory)
        let d = try await get("/d")
        #expect(d.cacheOutcome == .miss && Self.text(d) == "/d v6")
        let d2 = try await get("/d")
        #expect(d2.cacheOutcome == .miss && Self.text(d2) == "/d v7")
        #expect(Self.tree(root).isEmpty)
    }

    // MARK: Entries another process planted

    enum Planted: String, CaseIterable, Sendable {
        case hardLinkToTheUsersFile, linkToTheUsersFile, linkToPasswd, pipe, truncated, garbage, huge, anotherURLsEntry
    }

    /// A directory into which another process planted, before the cache opened, a file under
    /// the name the cache gives a URL's answer: a hard link or a link to a file of the user's,
    /// a link to `/etc/passwd`, a pipe, a truncated or garbage file, a sparse file of 8 GiB, a
    /// whole entry for another URL. The request for that URL is answered by the server, at
    /// once, and kept; the user's file and `/etc/passwd` keep their bytes.
    @Test(arguments: Planted.allCases)
    func anEntryPlantedBeforeTheCacheOpenedIsNeverTheAnswer(planted: Planted) async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        try makeUsersFiles()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let origin = try HTTPCacheTests.Origin { request, number in
            HTTPCacheTests.answer("\(Self.path(of: request)) v\(number)", "Cache-Control: max-age=600\r\n")
        }
        let url = URL(string: origin.url + "/target")!
        let file = directory.appendingPathComponent(CacheStore.fileName(CacheKey.of(url)) + ".terncache")
        let usersFile = users.appendingPathComponent("notes.txt")
        let passwd = try? Data(contentsOf: URL(fileURLWithPath: "/etc/passwd"))
        func entry(for url: URL, _ body: String) -> Data {
            CacheFile.encode(CachedResponse(url: CacheKey.of(url), status: 200, headers: ["cache-control": "max-age=600"], body: Data(body.utf8),
                                            requestDate: Date(), responseDate: Date(), varying: [:]))
        }
        switch planted {
        case .hardLinkToTheUsersFile: try #require(link(usersFile.path, file.path) == 0)
        case .linkToTheUsersFile: try FileManager.default.createSymbolicLink(at: file, withDestinationURL: usersFile)
        case .linkToPasswd: try FileManager.default.createSymbolicLink(atPath: file.path, withDestinationPath: "/etc/passwd")
        case .pipe: try #require(mkfifo(file.path, 0o600) == 0)
        case .truncated: try entry(for: url, "planted").dropLast(9).write(to: file)
        case .garbage: try Data((0..<4_000).map { UInt8(truncatingIfNeeded: $0 &* 17) }).write(to: file)
        case .huge:
            try Data("TERNCACHE2\n".utf8).write(to: file)
            try #require(truncate(file.path, 8 << 30) == 0)
        case .anotherURLsEntry: try entry(for: URL(string: origin.url + "/elsewhere")!, "planted").write(to: file)
        }
        let cache = try HTTPCache(directory: directory, clock: clock)
        let api = api(cache)
        let first: Response = try await api.request(route: .get(url.absoluteString)).value
        #expect(first.cacheOutcome == .miss && Self.text(first) == "/target v0")
        let second: Response = try await api.request(route: .get(url.absoluteString)).value
        #expect(second.cacheOutcome == .hit && Self.text(second) == "/target v0")
        cache.removeAll()
        #expect(Self.tree(users) == Self.usersFiles)
        #expect((try? Data(contentsOf: URL(fileURLWithPath: "/etc/passwd"))) == passwd)
    }
}
