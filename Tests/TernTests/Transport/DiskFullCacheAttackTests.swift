#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting

/// A cache on disk (`HTTPCache(directory:)`) whose entry cannot be written whole: in a child
/// process whose files may grow no larger than 256 KiB (``DiskFullDownloadAttackTests``), answers
/// fresh for ten minutes.
/// - A response of 400 KiB answers with the server's body, twice, each time from the server: no
///   part of it was kept, so none answers.
/// - A response of 300 KiB kept before the limit was lowered still answers, whole, from its file;
///   one of 10 KiB is kept and answers from its file.
/// - A response of 300 KiB kept before (`no-cache`, with an `ETag`) is revalidated: the `304`
///   answers with its whole body from the file; the refreshed entry the disk refuses is dropped,
///   not left stale or cut, and the next request asks for the whole body.
/// - The directory holds the two entries and the user's own file, no half-written one; the
///   user's file beside the directory is untouched.
@Suite(.onTestThreads) struct DiskFullCacheAttackTests {
    /// The body of `path`, which ends with its size.
    static func body(_ path: String) -> String {
        "kept \(path) " + String(repeating: "abcdefghij", count: (Int(path.split(separator: "/").last ?? "") ?? 0) / 10)
    }

    #if os(Linux) && compiler(>=6.3)
    @Test(.exitTest) func anEntryTheDiskRefusesIsNeverServedAndLeavesNoFile() async throws {
        let asked = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let path = request.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
                if path.hasPrefix("/stale/") {
                    // Kept, but asked about each time: answered 304 when the tag is the one it has.
                    let conditional = request.lowercased().contains("\r\nif-none-match: \"s1\"\r\n")
                    asked.append(path + (conditional ? " if changed" : ""))
                    let headers = "Cache-Control: no-cache\r\nETag: \"s1\"\r\n"
                    let answer = conditional ? "HTTP/1.1 304 Not Modified\r\n\(headers)\r\n"
                        : RawServer.Connection.response(DiskFullCacheAttackTests.body(path), headers: headers)
                    guard connection.send(answer) else { return }
                    continue
                }
                asked.append(path)
                guard connection.send(RawServer.Connection.response(DiskFullCacheAttackTests.body(path), headers: "Cache-Control: max-age=600\r\n")) else { return }
            }
        }
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String] in
                CrashBacktrace.printOnCrash()
                let manager = FileManager.default
                let folder = manager.temporaryDirectory.appendingPathComponent("tern-disk-full-cache-\(getpid())")
                let directory = folder.appendingPathComponent("cache")
                defer { try? manager.removeItem(at: folder) }
                guard (try? manager.createDirectory(at: directory, withIntermediateDirectories: true)) != nil,
                      manager.createFile(atPath: folder.appendingPathComponent("beside.txt").path, contents: Data("the user's".utf8)),
                      manager.createFile(atPath: directory.appendingPathComponent("inside.txt").path, contents: Data("the user's too".utf8)),
                      let transport = TestTransport.make(), let cache = try? HTTPCache(directory: directory) else { exit(2) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: .never, cache: cache), transport: transport,
                                      responseQueue: .global())
                func get(_ path: String) async -> String {
                    let promise: Promise<String> = api.request(route: .get(base + path))
                    return "\(path): " + (await DescriptorCacheAttackTests.outcome(promise, expected: DiskFullCacheAttackTests.body(path)))
                }
                print(await get("/kept/300000"))
                print(await get("/stale/300000"))
                guard DiskFullDownloadAttackTests.limitFiles(to: DiskFullDownloadAttackTests.limit) else { exit(2) }
                print(await get("/large/400000"))
                print(await get("/large/400000"))
                print(await get("/kept/300000"))
                print(await get("/small/10000"))
                print(await get("/small/10000"))
                print(await get("/stale/300000"))
                print(await get("/stale/300000"))
                let listing = DiskFullDownloadAttackTests.listing(directory)
                print("entries: \(listing.count { $0.hasSuffix(".terncache") && !$0.hasPrefix(".") })")
                print("else in the cache: \(listing.filter { !$0.hasSuffix(".terncache") || $0.hasPrefix(".") })")
                print("beside: \(DiskFullDownloadAttackTests.listing(folder))")
                print("files: \((try? String(contentsOf: folder.appendingPathComponent("beside.txt"), encoding: .utf8)) ?? "gone"), "
                      + "\((try? String(contentsOf: directory.appendingPathComponent("inside.txt"), encoding: .utf8)) ?? "gone")")
                print("dropped: \(cache.corruptEntriesDropped)")
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map(String.init)
        #expect(lines == [
            "/kept/300000: ok", "/stale/300000: ok", "/large/400000: ok", "/large/400000: ok", "/kept/300000: ok", "/small/10000: ok",
            "/small/10000: ok", "/stale/300000: ok", "/stale/300000: ok",
            "entries: 2", "else in the cache: [\"inside.txt\"]", "beside: [\"beside.txt\", \"cache\"]",
            "files: the user's, the user's too", "dropped: 0",
        ], "\(printed)")
        // The large one asked for each time; the fresh ones once, then answered from their
        // files; the stale one answered 304, from its file, whose refresh the disk refused: it
        // is dropped, and the next request asks for the whole body again.
        #expect(asked.items == ["/kept/300000", "/stale/300000", "/large/400000", "/large/400000", "/small/10000",
                                "/stale/300000 if changed", "/stale/300000"], "\(printed)")
    }
    #endif
}
