import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A cache on disk fed many small answers by a server: the bytes it counts against its limit
/// are the files' lengths, not the disk they take.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct DiskBlocksCacheAttackTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-blocks-\(UUID().uuidString)")
    static let limit = 128 << 10

    /// `HTTPCache.swift` (`init(directory:maximumBytes:maximumResponseBytes:clock:)`): "A cache in
    /// `directory` ..., of at most `maximumBytes` on disk (20 MiB by default)". Each response is a
    /// file of its own, and a file of a few hundred bytes takes a whole block (4 KiB here); the
    /// cache counts only the files' lengths. A server that answers 600 distinct URLs with an
    /// empty body and `max-age` leaves a 128 KiB cache taking more than a mebibyte of disk (and
    /// hundreds of inodes), ten times its limit; a 20 MiB cache, at that rate, 250 MiB.
    @Test func aCacheOnDiskTakesNoMoreDiskThanItsLimit() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try LoopbackServer { _ in
            ServerResponse(headers: ["Cache-Control": "max-age=3600", "Content-Type": "text/plain"], body: Data())
        }
        defer { server.stop() }
        let cache = try HTTPCache(directory: directory, maximumBytes: Self.limit)
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, cache: cache),
                              transport: TestTransport.make(), responseQueue: .global())
        for index in 0..<600 {
            let _: Response = try await api.request(route: .get(server.baseURL + "/i/\(index)")).value
        }
        let again: Response = try await api.request(route: .get(server.baseURL + "/i/599")).value
        #expect(again.cacheOutcome == .hit)
        var lengths = 0
        var taken = 0
        var count = 0
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".terncache") {
            var status = stat()
            guard stat(directory.appendingPathComponent(file).path, &status) == 0 else { continue }
            lengths += Int(status.st_size)
            taken += Int(status.st_blocks) * 512
            count += 1
        }
        #expect(taken <= 2 * Self.limit,
                "a cache of \(Self.limit >> 10) KiB: \(count) files, \(lengths >> 10) KiB long, take \(taken >> 10) KiB of disk")
    }
}
