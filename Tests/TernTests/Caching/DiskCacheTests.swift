import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A cache on disk: kept across a restart, readable by the user alone, a damaged file dropped
/// and counted and never served, what a crash left half-written removed, the byte limit held
/// across restarts.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct DiskCacheTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-cache-\(UUID().uuidString)")
    let clock = TestClock()

    func api(_ cache: HTTPCache) -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: cache), transport: TestTransport.make(), responseQueue: .global())
    }

    func files() throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil).filter { $0.pathExtension == "terncache" }
    }

    func origin() throws -> HTTPCacheTests.Origin {
        try HTTPCacheTests.Origin { _, number in HTTPCacheTests.answer("v\(number)" + String(repeating: ".", count: 1_000), "Cache-Control: max-age=600\r\n") }
    }

    @Test func whatIsKeptOutlivesTheCache() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try origin()
        _ = try await (api(try HTTPCache(directory: directory, clock: clock)).request(route: .get(origin.url + "/kept")) as Promise<Data>).value
        let restarted = try HTTPCache(directory: directory, clock: clock)
        let response: Response = try await api(restarted).request(route: .get(origin.url + "/kept")).value
        #expect(response.cacheOutcome == .hit)
        #expect(String(decoding: response.body.prefix(2), as: UTF8.self) == "v0")
        #expect(origin.count == 1)
    }

    /// A private cache keeps what was answered to credentials: its files are the user's alone
    /// (under the usual umask of 022, a file made as most are would be readable by all).
    @Test func whatIsKeptIsReadableByTheUserAlone() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try origin()
        _ = try await (api(try HTTPCache(directory: directory, clock: clock)).request(route: .get(origin.url + "/kept")) as Promise<Data>).value
        let kept = try files()
        #expect(kept.count == 1)
        for file in kept {
            let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
    }

    @Test(arguments: ["truncated", "flipped", "empty"])
    func aDamagedFileIsDroppedCountedAndNeverServed(damage: String) async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try origin()
        _ = try await (api(try HTTPCache(directory: directory, clock: clock)).request(route: .get(origin.url + "/damaged")) as Promise<Data>).value
        let file = try #require(try files().first)
        var bytes = try Data(contentsOf: file)
        switch damage {
        case "truncated": bytes = bytes.prefix(bytes.count / 2)
        case "flipped": bytes[bytes.count / 2] ^= 0x20
        default: bytes = Data()
        }
        try bytes.write(to: file)
        let restarted = try HTTPCache(directory: directory, clock: clock)
        let response: Response = try await api(restarted).request(route: .get(origin.url + "/damaged")).value
        #expect(response.cacheOutcome == .miss)
        #expect(String(decoding: response.body.prefix(2), as: UTF8.self) == "v1")
        #expect(restarted.corruptEntriesDropped == 1)
        // Written again, whole.
        #expect(try await (api(restarted).request(route: .get(origin.url + "/damaged")) as Promise<Response>).value.cacheOutcome == .hit)
    }

    @Test func whatACrashLeftHalfWrittenIsRemoved() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // Named as the cache names its writes in progress.
        let leftover = try CacheFile.writeTemporary(Data("half".utf8), beside: directory.appendingPathComponent("0123456789abcdef.terncache"))
        // Old enough that no other cache on the directory can still be writing it.
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-2 * OwnFiles.abandonedAfter)], ofItemAtPath: leftover.path)
        _ = try HTTPCache(directory: directory, clock: clock)
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
    }

    @Test func theByteLimitHoldsAcrossRestarts() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try origin()
        let roomy = try HTTPCache(directory: directory, clock: clock)
        for path in ["/1", "/2", "/3", "/4"] {
            _ = try await (api(roomy).request(route: .get(origin.url + path)) as Promise<Data>).value
            // A restarted cache orders its files by their modification times, which the kernel
            // keeps to a tick of its clock (a few milliseconds): an optimized build wrote two in
            // one tick, and the restarted cache kept the older of them.
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try files().count == 4)
        let size = roomy.byteCount / 4
        let small = try HTTPCache(directory: directory, maximumBytes: size * 2 + size / 2, clock: clock)
        #expect(small.byteCount <= size * 2 + size / 2)
        #expect(try files().count == 2)
        // The oldest went.
        #expect(try await (api(small).request(route: .get(origin.url + "/4")) as Promise<Response>).value.cacheOutcome == .hit)
        #expect(try await (api(small).request(route: .get(origin.url + "/1")) as Promise<Response>).value.cacheOutcome == .miss)
    }

    /// A validator that could end its field (a file changed by someone else) is never sent: the
    /// request goes out unconditional, where a sound one is sent. (Foundation's `URLRequest` drops
    /// such a value too, here; the cache does not count on it.)
    @Test func aValidatorThatCouldInjectAFieldIsNotSent() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try HTTPCacheTests.Origin { _, _ in HTTPCacheTests.answer("fresh", "Cache-Control: no-cache\r\n") }
        let cache = try HTTPCache(directory: directory, clock: clock)
        for (path, tag) in [("/tampered", "\"a\"\r\nX-Evil: 1"), ("/sound", "\"b\"")] {
            let url = URL(string: origin.url + path)!
            cache.store(CachedResponse(url: CacheKey.of(url), status: 200, headers: ["etag": tag, "cache-control": "no-cache"],
                                       body: Data("old".utf8), requestDate: cache.now, responseDate: cache.now, varying: [:]))
            let response: Response = try await api(cache).request(route: .get(url.absoluteString)).value
            #expect(String(decoding: response.body, as: UTF8.self) == "fresh")
        }
        let requests = origin.requests.items
        #expect(requests.count == 2)
        #expect(requests.first.map { !$0.contains("X-Evil") && !$0.contains("If-None-Match") } == true)
        #expect(requests.last?.contains("If-None-Match: \"b\"") == true)
    }

    @Test func aFileFromAnotherKeyWithTheSameNameIsNotServed() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = try HTTPCache(directory: directory, clock: clock)
        let url = URL(string: "http://a.example/x")!
        let response = CachedResponse(url: CacheKey.of(url), status: 200, headers: [:], body: Data("a".utf8),
                                      requestDate: cache.now, responseDate: cache.now, varying: [:])
        #expect(CacheFile.decode(CacheFile.encode(response)) == .intact(response))
        cache.store(response)
        #expect(cache.response(for: URLRequest(url: url), trust: nil) == response)
        // The file of another URL put where this one's goes, as a name both hash to would.
        let other = URL(string: "http://b.example/x")!
        let file = try #require(try files().first)
        try CacheFile.encode(CachedResponse(url: CacheKey.of(other), status: 200, headers: [:], body: Data("b".utf8),
                                            requestDate: cache.now, responseDate: cache.now, varying: [:])).write(to: file)
        #expect(cache.response(for: URLRequest(url: url), trust: nil) == nil)
        #expect(cache.corruptEntriesDropped == 0)
    }

    /// A file larger than any the cache writes is not read (one planted a gigabyte long would be
    /// read whole into memory), whatever it holds: it is not served, and left to the cache with
    /// a larger limit that wrote it (SharedCacheLimitsAttackTests), not counted as damage. One
    /// of another size within that, whole, is another cache's write to the directory, and served.
    @Test func aFileLargerThanTheCacheWritesIsNotRead() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = try HTTPCache(directory: directory, maximumResponseBytes: 1_000, clock: clock)
        let url = URL(string: "http://a.example/x")!
        func response(_ body: String) -> CachedResponse {
            CachedResponse(url: CacheKey.of(url), status: 200, headers: [:], body: Data(body.utf8), requestDate: cache.now, responseDate: cache.now, varying: [:])
        }
        cache.store(response("kept"))
        try CacheFile.encode(response("written by another cache")).write(to: try #require(try files().first))
        #expect(cache.response(for: URLRequest(url: url), trust: nil) == response("written by another cache"))
        try CacheFile.encode(response(String(repeating: "planted", count: 200_000))).write(to: try #require(try files().first))
        #expect(cache.response(for: URLRequest(url: url), trust: nil) == nil)
        #expect(cache.corruptEntriesDropped == 0)
        #expect(try files().count == 1)
    }

    /// A file of an older format is dropped as unreadable, not counted as damage.
    @Test func aFileOfAnotherFormatIsDroppedUncounted() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try origin()
        _ = try await (api(try HTTPCache(directory: directory, clock: clock)).request(route: .get(origin.url + "/old")) as Promise<Data>).value
        let file = try #require(try files().first)
        try (Data("TERNCACHE1\n".utf8) + Data(count: 64)).write(to: file)
        let restarted = try HTTPCache(directory: directory, clock: clock)
        let response: Response = try await api(restarted).request(route: .get(origin.url + "/old")).value
        #expect(response.cacheOutcome == .miss)
        #expect(restarted.corruptEntriesDropped == 0)
    }

    /// A change anywhere in a file, of any bit, is found.
    @Test func everyBitOfAFileIsChecked() {
        let response = CachedResponse(url: "http://a.example/x", status: 200, headers: ["etag": "\"1\""], body: Data((0..<100).map { UInt8($0) }),
                                      requestDate: Date(timeIntervalSince1970: 1), responseDate: Date(timeIntervalSince1970: 2), varying: [:])
        let data = CacheFile.encode(response)
        for offset in data.indices {
            for bit in [0, 3, 7] {
                var damaged = data
                damaged[offset] ^= 1 << bit
                #expect(CacheFile.decode(damaged) != .intact(response), "byte \(offset), bit \(bit)")
            }
        }
        #expect(CacheFile.decode(data.dropLast()) == .damaged)
        #expect(CacheFile.decode(data + Data([0])) == .damaged)
    }

    /// Many requests at once over one cache on disk, hits and writes and removals together:
    /// each answer is its own URL's, and the index and the directory agree at the end.
    @Test func concurrentHitsWritesAndRemovalsKeepEachAnswerItsOwn() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = try HTTPCache(directory: directory, maximumBytes: 40_000, clock: clock)
        let urls = (0..<12).map { URL(string: "http://a.example/\($0)")! }
        func response(_ index: Int, _ round: Int) -> CachedResponse {
            CachedResponse(url: CacheKey.of(urls[index]), status: 200, headers: [:], body: Data("\(index)/\(round)".utf8 + Data(count: 4_000)),
                           requestDate: cache.now, responseDate: cache.now, varying: [:])
        }
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for round in 0..<60 {
                        let index = (worker * 7 + round) % urls.count
                        switch round % 3 {
                        case 0: cache.store(response(index, round))
                        case 1: cache.remove([CacheKey.of(urls[index])])
                        default:
                            if let found = cache.response(for: URLRequest(url: urls[index]), trust: nil) {
                                #expect(String(decoding: found.body.prefix(while: { $0 != 0 }), as: UTF8.self).hasPrefix("\(index)/"))
                            }
                        }
                    }
                }
            }
        }
        #expect(cache.corruptEntriesDropped == 0)
        #expect(cache.byteCount <= 40_000)
        // Each file counted in the whole 4 KiB blocks it takes.
        let onDisk = try files().reduce(0) { $0 + (((try? $1.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0) + 4095) / 4096 * 4096 }
        #expect(onDisk == cache.byteCount)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).allSatisfy { $0.hasSuffix(".terncache") })
    }
}
