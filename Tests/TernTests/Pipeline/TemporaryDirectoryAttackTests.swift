// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Glibc
import Testing
@testable import Tern
import TernTesting

/// A user's `TMPDIR` that names no directory (missing, or a regular file): Foundation's
/// `temporaryDirectory` then names a place nothing can be written. Set in a child process (an
/// exit test). On Linux nothing Tern sends or keeps goes through it: a multipart upload with a
/// file part (streamed, not assembled in a temporary file), a download (its partial file
/// beside its destination) and a disk cache in a directory of the user's each work, on either
/// transport.
@Suite(.onTestThreads, .exitTest) struct TemporaryDirectoryAttackTests {
    @Test(arguments: ["missing", "a file"]) func aTemporaryDirectoryThatIsNoneStopsNothing(kind: String) async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("tern-tmpdir-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let temporary = work.appendingPathComponent("tmp")
        if kind == "a file" { try Data("not a directory".utf8).write(to: temporary) }
        let upload = work.appendingPathComponent("photo.bin")
        try Data(repeating: 0x42, count: 300_000).write(to: upload)
        let uploads = Recorder<Int>()
        let server = try LoopbackServer { request in
            if request.method == "POST" {
                uploads.append(request.body.count)
                return .text("got \(request.body.range(of: Data(repeating: 0x42, count: 300_000)) != nil)")
            }
            return .text(String(repeating: "d", count: 200_000))
        }
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                [temporary = temporary.path as String, work = work.path as String, upload = upload.path as String, url = server.baseURL as String] in
                setenv("TMPDIR", temporary, 1)
                let cache = try HTTPCache(directory: URL(fileURLWithPath: work).appendingPathComponent("cache"))
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: cache),
                                      transport: TestTransport.make(), responseQueue: .global())
                var outcomes = [FileManager.default.temporaryDirectory.path.hasPrefix(temporary) ? "tmpdir" : "other"]
                let parts = MultipartParameters(parts: [Part(name: "photo", fileURL: URL(fileURLWithPath: upload)), Part(name: "title", value: "cat")])
                switch await (api.request(route: .post(url + "/upload"), parameters: parts) as Promise<String>).result {
                case .success(let text): outcomes.append(text)
                case .failure(let error): outcomes.append("upload: \(error)")
                }
                let destination = URL(fileURLWithPath: work).appendingPathComponent("download.bin")
                switch await api.download(route: .get(url + "/file"), to: destination).result {
                case .success: outcomes.append("\((try? Data(contentsOf: destination))?.count ?? -1)")
                case .failure(let error): outcomes.append("download: \(error)")
                }
                print(outcomes.joined(separator: "|"))
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(printed == "tmpdir|got true|200000", "\(printed)")
        #expect(uploads.items.count == 1)
        #expect(!FileManager.default.fileExists(atPath: temporary.path) || kind == "a file")
    }
}
#endif
