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

/// The cache where it meets the user's machine and the other features: a directory that holds
/// the user's files, two caches on one directory, a disk that fills, credentials in a URL,
/// streams, answers larger than the cache, and eviction at any size. On every transport.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CacheSeamTests {
    typealias Origin = HTTPCacheTests.Origin
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-cache-\(UUID().uuidString)")
    let clock = TestClock()

    func api(_ cache: HTTPCache) -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: cache), transport: TestTransport.make(), responseQueue: .global())
    }

    func get(_ api: AbstractAPI, _ url: String) async throws -> Response {
        try await api.request(route: .get(url)).value
    }

    func text(_ response: Response) -> String { String(decoding: response.body, as: UTF8.self) }

    /// Every file under `directory`, by its path relative to it, and its contents.
    func tree() -> [String: Data] {
        let base = directory.resolvingSymlinksInPath().path
        var found: [String: Data] = [:]
        let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)
        while let file = walker?.nextObject() as? URL {
            guard (try? file.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else { continue }
            let path = file.resolvingSymlinksInPath().path
            found[String(path.dropFirst(base.count + 1))] = (try? Data(contentsOf: file)) ?? Data()
        }
        return found
    }

    // MARK: The user's directory

    /// A directory that holds the user's files, one of them named as a cache file would be but
    /// a directory, and another a write in progress would be: the cache opens there, keeps and
    /// evicts responses, forgets them all, and every file of the user's is still there, as it was.
    @Test func theUsersFilesInTheDirectoryAreNeverTouched() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let manager = FileManager.default
        let users: [String: Data] = [
            "notes.txt": Data("my notes".utf8),
            ".config": Data("key=value".utf8),
            "photos/2024/beach.jpg": Data(repeating: 0xFF, count: 3_000),
            "0123456789abcdef.terncache/inside.txt": Data("a directory the cache did not make".utf8),
            "old.tmp": Data("a temporary file of the user's".utf8),
        ]
        for (path, contents) in users {
            let file = directory.appendingPathComponent(path)
            try manager.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try contents.write(to: file)
            // Old, as a crash's leftovers would be.
            try manager.setAttributes([.modificationDate: Date.distantPast], ofItemAtPath: file.path)
        }
        let origin = try Origin { _, number in HTTPCacheTests.answer("v\(number)" + String(repeating: ".", count: 2_000), "Cache-Control: max-age=600\r\n") }
        let cache = try HTTPCache(directory: directory, maximumBytes: 5_000, clock: clock)
        #expect(cache.byteCount == 0)
        for path in ["/1", "/2", "/3", "/1"] { _ = try await get(api(cache), origin.url + path) }
        cache.removeAll()
        _ = try HTTPCache(directory: directory, maximumBytes: 1, clock: clock)
        #expect(tree().filter { users[$0.key] != nil } == users)
        #expect(tree().keys.filter { $0.hasSuffix(".terncache") && users[$0] == nil }.isEmpty)
    }

    // MARK: Two caches on one directory

    /// Two caches on one directory, as two processes (or two APIs) may open: entries one writes
    /// while the other has them indexed at another size are read whole and served, none counted
    /// as damaged; a write in progress is left alone by a cache opened meanwhile.
    @Test func twoCachesOnOneDirectoryServeEachOthersWrites() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try HTTPCache(directory: directory, clock: clock)
        let urls = (0..<30).map { URL(string: "http://a.example/\($0)")! }
        func response(_ index: Int, _ body: String) -> CachedResponse {
            CachedResponse(url: CacheKey.of(urls[index]), status: 200, headers: ["cache-control": "max-age=600"], body: Data(body.utf8),
                           requestDate: first.now, responseDate: first.now, varying: [:])
        }
        for index in urls.indices { first.store(response(index, "first \(index)")) }
        let second = try HTTPCache(directory: directory, clock: clock)
        for index in urls.indices { first.store(response(index, "first \(index), written again longer")) }
        for index in urls.indices {
            #expect(second.response(for: URLRequest(url: urls[index]), trust: nil).map { String(decoding: $0.body, as: UTF8.self) }
                == "first \(index), written again longer")
        }
        #expect(second.corruptEntriesDropped == 0 && first.corruptEntriesDropped == 0)
        #expect(second.byteCount == first.byteCount)

        // A write in progress, as the first cache's writes are named.
        let destination = directory.appendingPathComponent(CacheStore.fileName("http://k.example/") + ".terncache")
        let inProgress = try CacheFile.writeTemporary(Data("half".utf8), beside: destination)
        _ = try HTTPCache(directory: directory, clock: clock)
        #expect(FileManager.default.fileExists(atPath: inProgress.path))
    }

    // MARK: A full disk

    /// A disk that fills while a response is written: the write is given up, leaving no
    /// partial file, and the request is answered all the same. A small file system of its own,
    /// mounted for the test (which needs root, as CI has).
    @Test(.enabled(if: getuid() == 0, "mounting a small file system needs root"))
    func aWriteThatFillsTheDiskLeavesNothingBehind() async throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try #require(mount("tmpfs", directory.path, "tmpfs", 0, "size=64k") == 0, "mount: \(String(cString: strerror(errno)))")
        defer { umount2(directory.path, Int32(MNT_DETACH)) }
        let origin = try Origin { _, number in HTTPCacheTests.answer("v\(number)" + String(repeating: ".", count: 40_000), "Cache-Control: max-age=600\r\n") }
        let cache = try HTTPCache(directory: directory, clock: clock)
        for path in ["/1", "/2", "/3", "/4"] {
            let response = try await get(api(cache), origin.url + path)
            #expect(response.body.count > 40_000)
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(!names.isEmpty && names.allSatisfy { $0.hasSuffix(".terncache") }, "\(names)")
        // Each file counted in the whole 4 KiB blocks it takes.
        let onDisk = try names.reduce(0) { $0 + (((try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent($1).path)[.size] as? Int) ?? 0) + 4095) / 4096 * 4096 }
        #expect(onDisk == cache.byteCount)
    }

    // MARK: Sizes

    /// One answer larger than the whole cache is not kept, and pushes out nothing that is, in
    /// memory and on disk (where each small answer takes a 4 KiB block).
    @Test(arguments: [false, true])
    func anAnswerLargerThanTheCacheEmptiesNothing(onDisk: Bool) async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try Origin { request, number in
            let size = request.hasPrefix("GET /huge") ? 120_000 : 1_000
            return HTTPCacheTests.answer("v\(number)" + String(repeating: ".", count: size), "Cache-Control: max-age=600\r\n")
        }
        let cache = onDisk ? try HTTPCache(directory: directory, maximumBytes: 90_000, maximumResponseBytes: 200_000, clock: clock)
            : HTTPCache(maximumBytes: 90_000, maximumResponseBytes: 200_000, clock: clock)
        let api = api(cache)
        for index in 0..<20 { _ = try await get(api, origin.url + "/small/\(index)") }
        let held = cache.byteCount
        #expect(try await get(api, origin.url + "/huge").body.count > 120_000)
        #expect(try await get(api, origin.url + "/huge").cacheOutcome == .miss)
        #expect(cache.byteCount == held)
        for index in 0..<20 { #expect(try await get(api, origin.url + "/small/\(index)").cacheOutcome == .hit) }
    }

    /// Eviction from a full cache costs a constant per kept response on average, whatever the
    /// cache holds: each response kept, or looked up, past the limit examines few entries, not
    /// all of them (a sort of every entry on each keep slowed every request twentyfold once
    /// the cache held 12,000).
    @Test func evictionExaminesAFewEntriesPerResponseAtAnySize() {
        var store = CacheStore(limit: 20_000 * 300)
        func response(_ index: Int) -> CachedResponse {
            CachedResponse(url: "http://a.example/\(index)", status: 200, headers: [:], body: Data(count: 44),
                           requestDate: Date(), responseDate: Date(), varying: [:])
        }
        for index in 0..<20_000 { store.keep(response(index), for: "http://a.example/\(index)") }
        #expect(store.byteCount == 20_000 * 300)
        let examined = store.evictionSteps
        for index in 20_000..<60_000 {
            store.keep(response(index), for: "http://a.example/\(index)")
            _ = store.find("http://a.example/\(index - 7_000)")
        }
        #expect(store.byteCount <= 20_000 * 300)
        #expect(store.evictionSteps - examined <= 3 * 40_000, "\(store.evictionSteps - examined) entries examined for 40,000 keeps")
        // The least recently used went: those looked up stayed.
        #expect(store.find("http://a.example/52999") != nil)
        #expect(store.find("http://a.example/21000") == nil)
    }

    // MARK: Credentials in the URL

    /// A URL's user and password are credentials (libcurl and URLSession send them as
    /// `Authorization: Basic`): the answer is kept only when it says it may be shared, never for
    /// another user, and neither the name nor the password is written to disk.
    @Test(arguments: [false, true])
    func credentialsInAURLAreCredentials(onDisk: Bool) async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try Origin { request, number in
            let field = request.components(separatedBy: "\r\n").first { $0.hasPrefix("Authorization: Basic ") }
            let credentials = field.flatMap { Data(base64Encoded: String($0.dropFirst(21))) }.map { String(decoding: $0, as: UTF8.self) }
            // Named in the answer, but not as they came: the test looks for them on disk.
            let user = ["alice:s3cret": "A", "bob:hunter2": "B"][credentials ?? ""] ?? "nobody"
            let control = request.hasPrefix("GET /shared") ? "public, max-age=600" : "max-age=600"
            return HTTPCacheTests.answer("v\(number) for \(user)", "Cache-Control: \(control)\r\n")
        }
        let cache = onDisk ? try HTTPCache(directory: directory, clock: clock) : HTTPCache(clock: clock)
        let api = api(cache)
        let alice = origin.url.replacingOccurrences(of: "://", with: "://alice:s3cret@")
        let bob = origin.url.replacingOccurrences(of: "://", with: "://bob:hunter2@")
        #expect(text(try await get(api, alice + "/own")) == "v0 for A")
        #expect(try await get(api, alice + "/own").cacheOutcome == .miss)
        #expect(text(try await get(api, alice + "/shared")) == "v2 for A")
        #expect(try await get(api, alice + "/shared").cacheOutcome == .hit)
        let bobs = try await get(api, bob + "/shared")
        #expect(bobs.cacheOutcome == CacheOutcome.miss)
        #expect(text(bobs) == "v3 for B")
        if onDisk {
            let written = tree().values
            #expect(!written.isEmpty)
            for secret in ["s3cret", "alice", "hunter2", "bob"] {
                #expect(!written.contains { $0.range(of: Data(secret.utf8)) != nil }, "\(secret) was written")
            }
        }
    }

    // MARK: Dates and HEAD

    /// A response that came without a `Date` is kept with one: the time it came, by the cache's
    /// clock (RFC 9110, §6.6.1).
    @Test func aResponseWithoutADateIsKeptWithOne() async throws {
        let origin = try Origin { _, number in "HTTP/1.1 200 OK\r\nCache-Control: max-age=600\r\nContent-Length: 2\r\n\r\nv\(number)" }
        let cache = HTTPCache(clock: clock)
        let api = api(cache)
        #expect(try await get(api, origin.url + "/undated").headers["Date"] == nil)
        clock.advance(by: 5)
        let hit = try await get(api, origin.url + "/undated")
        #expect(hit.cacheOutcome == .hit)
        let date = try #require(hit.headers["Date"].flatMap(HTTPDate.parse))
        #expect(abs(date.timeIntervalSince(cache.now) + 5) < 2)
    }

    /// A `HEAD` whose `200` shows a validator other than the kept `GET`'s: the server has
    /// another response now, and the kept one, though fresh, is not served again (RFC 9111,
    /// §4.3.5).
    @Test(arguments: ["ETag: \"new\"", "Last-Modified: Tue, 01 Dec 2026 10:00:00 GMT"])
    func aHeadShowingAnotherValidatorMakesTheKeptGetStale(validator: String) async throws {
        let origin = try Origin { request, number in
            if request.hasPrefix("HEAD ") { return "HTTP/1.1 200 OK\r\n\(validator)\r\nContent-Length: 6\r\n\r\n" }
            return HTTPCacheTests.answer("v\(number)", "ETag: \"old\"\r\nLast-Modified: Sun, 01 Nov 2026 10:00:00 GMT\r\nCache-Control: max-age=600\r\n")
        }
        let api = api(HTTPCache(clock: clock))
        _ = try await get(api, origin.url + "/changing")
        #expect(try await get(api, origin.url + "/changing").cacheOutcome == .hit)
        // Asked of the server: the cache does not answer a HEAD that says no-cache.
        let head: Response = try await api.request(route: .head(origin.url + "/changing"),
                                                   options: RequestOptions(cacheDirectives: CacheDirectives(noCache: true))).value
        #expect(head.cacheOutcome == .miss)
        let after = try await get(api, origin.url + "/changing")
        #expect(after.cacheOutcome != .hit && text(after) != "v0")
    }

    // MARK: Streams

    /// A stream the server marks cacheable is never kept nor answered from the cache: each
    /// reading reaches the server, and nothing is kept.
    @Test func aStreamNeverUsesTheCache() async throws {
        let origin = try Origin { _, number in
            HTTPCacheTests.answer("data: event \(number)\n\n", "Content-Type: text/event-stream\r\nCache-Control: max-age=600\r\nETag: \"e\"\r\n")
        }
        let cache = HTTPCache(clock: clock)
        let api = api(cache)
        for number in 0..<3 {
            var events: [String] = []
            for try await event in api.stream(route: .get(origin.url + "/events")).events { events.append(event.data) }
            #expect(events == ["event \(number)"])
        }
        #expect(origin.count == 3)
        #expect(!origin.requests.items.contains { $0.contains("If-None-Match") })
        #expect(cache.byteCount == 0)
        // A plain request is still cached.
        _ = try await get(api, origin.url + "/events")
        #expect(try await get(api, origin.url + "/events").cacheOutcome == .hit)
    }

    // MARK: Trust

    #if os(Linux)
    /// One cache shared by an API without pins and one pinned to a key the server does not have,
    /// over one transport trusting a test CA: what the first kept is never served to the second,
    /// whose requests fail on the pin as they would with no cache, for `GET` and `HEAD`, in
    /// memory and on disk across a restart; what the first kept still serves the first.
    @Test(arguments: [false, true])
    func aSharedCacheNeverAnswersAPinnedAPIWithWhatWasFetchedWithoutItsPins(onDisk: Bool) async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let certificates = try TestCertificates()
        let origin = try Origin { _, number in HTTPCacheTests.answer("v\(number)", "Cache-Control: public, max-age=600\r\nETag: \"e\"\r\n") }
        let relay = try TLSRelay(certificates: certificates, to: origin.server.port)
        defer { relay.stop() }
        let transport = try CurlTransport(trusting: certificates.authority)
        func cache() throws -> HTTPCache { onDisk ? try HTTPCache(directory: directory, clock: clock) : HTTPCache(clock: clock) }
        let shared = try cache()
        let open = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never, cache: shared), transport: transport, responseQueue: .global())
        func pinned(_ cache: HTTPCache, to pin: String) throws -> AbstractAPI {
            AbstractAPI(configuration: APIConfiguration(retryPolicy: .never, certificatePins: try CertificatePins(["127.0.0.1": [pin]]), cache: cache),
                        transport: transport, responseQueue: .global())
        }
        let wrongPin = "sha256/" + Data(repeating: 7, count: 32).base64EncodedString()
        #expect(text(try await get(open, relay.baseURL + "/kept")) == "v0")
        #expect(try await get(open, relay.baseURL + "/kept").cacheOutcome == .hit)
        func expectPinningFailure(_ api: AbstractAPI, sourceLocation: SourceLocation = #_sourceLocation) async {
            for route in [Route.get(relay.baseURL + "/kept"), .head(relay.baseURL + "/kept")] {
                let result = await (api.request(route: route) as Promise<Response>).result
                guard case .failure(APIError.pinningFailed) = result else {
                    Issue.record("\(route.method) gave \(result)", sourceLocation: sourceLocation)
                    continue
                }
            }
        }
        await expectPinningFailure(try pinned(shared, to: wrongPin))
        // The right pin: answered by the server, not with what the open API kept.
        let rightly = try pinned(shared, to: try certificates.pin(ofKey: "server.key"))
        let served = try await get(rightly, relay.baseURL + "/kept")
        #expect(served.cacheOutcome != .hit)
        #expect(try await get(rightly, relay.baseURL + "/kept").cacheOutcome == .hit)
        if onDisk {
            #expect(text(try await get(open, relay.baseURL + "/other")) != "")
            let restarted = try cache()
            await expectPinningFailure(try pinned(restarted, to: wrongPin))
            let reopened = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never, cache: restarted), transport: transport, responseQueue: .global())
            #expect(try await get(reopened, relay.baseURL + "/other").cacheOutcome == .hit)
        }
    }
    #endif
}
