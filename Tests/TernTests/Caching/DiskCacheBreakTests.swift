import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The disk cache against files in its directory before it opens: a file larger than any the
/// cache writes, planted under a URL's name (or left by a run with a larger
/// `maximumResponseBytes`), which it indexed at its size as it opened and then read whole,
/// whatever that size, and served; and a file of the user's named almost as a write in
/// progress, which it removed.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct DiskCacheBreakTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-cache-break-\(UUID().uuidString)")

    /// A whole, valid entry of 4 MiB for the URL, planted before a cache with a 64 MiB limit
    /// and bodies of at most 1,000 bytes (files of at most 1,000 bytes and 1 MiB of head)
    /// opens: the request is answered by the server, and the file is dropped unread.
    @Test func aFileLargerThanTheCacheWritesPlantedBeforeItOpensIsNotRead() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let origin = try HTTPCacheTests.Origin { _, number in HTTPCacheTests.answer("from the server \(number)", "Cache-Control: max-age=600\r\n") }
        let url = URL(string: origin.url + "/big")!
        let planted = CachedResponse(url: CacheKey.of(url), status: 200, headers: ["cache-control": "max-age=600"],
                                     body: Data(repeating: 0x41, count: 4 << 20), requestDate: Date(), responseDate: Date(), varying: [:])
        try CacheFile.encode(planted).write(to: directory.appendingPathComponent(CacheStore.fileName(CacheKey.of(url)) + ".terncache"))
        let cache = try HTTPCache(directory: directory, maximumBytes: 64 << 20, maximumResponseBytes: 1_000)
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, cache: cache), transport: TestTransport.make(),
                              responseQueue: .global())
        let response: Response = try await api.request(route: .get(url.absoluteString)).value
        #expect(response.cacheOutcome == .miss, "\(String(describing: response.cacheOutcome))")
        #expect(response.body.count < 1_000 && String(decoding: response.body, as: UTF8.self) == "from the server 0", "\(response.body.count) bytes")
    }

    /// Files of the user's, hours old, whose names start as the cache's writes in progress do
    /// (`.`, 16 hex digits, `.terncache.`) but are not one (those end `.<UUID>.tmp`): a cache
    /// opening the directory leaves them. It takes any name with that start for a write a crash
    /// left, and removes it.
    @Test func aUsersFileNamedAlmostAsAWriteInProgressStays() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let names = [".0123456789abcdef.terncache.backup", ".fedcba9876543210.terncache.notes.txt"]
        for name in names {
            let file = directory.appendingPathComponent(name)
            try Data("the user's \(name)".utf8).write(to: file)
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -7200)], ofItemAtPath: file.path)
        }
        // A write a crash left, two hours old, as the cache names them: removed.
        let abandoned = try CacheFile.writeTemporary(Data("half".utf8), beside: directory.appendingPathComponent("00000000000000aa.terncache"))
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -7200)], ofItemAtPath: abandoned.path)
        _ = try HTTPCache(directory: directory)
        #expect(!FileManager.default.fileExists(atPath: abandoned.path))
        for name in names {
            #expect((try? Data(contentsOf: directory.appendingPathComponent(name))) == Data("the user's \(name)".utf8), "\(name)")
        }
    }
}
