import Foundation
import Testing
import Tern
import TernTesting

/// A download whose answer is compressed (`Content-Encoding: gzip`, a strong `ETag`) and cut
/// halfway through its body, recorded, then replayed to the same destination.
///
/// UploadsAndDownloads.md promises: "Bytes are kept only when the response had a strong
/// validator ... and was not compressed; otherwise a failed download leaves nothing behind";
/// RecordingAndReplaying.md that a test replays "offline, exact", that an exchange "cut short
/// during its body keeps what came, and on replay fails after it the same way (a download Tern
/// then resumes with `Range` replays to the same file)", and that compressed bodies are kept
/// decompressed, their `Content-Encoding` dropped on replay. Recorded, the download fails and
/// leaves nothing: `ResumableDownload.pending(for:)` is `nil`. Replayed, the same answer comes
/// without its `Content-Encoding` (`HTTPArchive.Entry.answer`), so Tern takes it for an
/// uncompressed one, keeps the bytes undone (more than the compressed `Content-Length` the entry
/// still states) and records them for a resume: `pending(for:)` now returns one, a partial file
/// is left beside the destination, and an app that resumes when it can (the article's own
/// example) takes another path on replay than it took when recorded.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingCutCompressedDownloadAttackTests {
    @Test func aCutCompressedDownloadReplaysLeavingNothingBehind() async throws {
        let text = Data((0..<20_000).map { "line \($0) of the export\n" }.joined().utf8)
        let gzip = GzipStream.compressed(text)
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            connection.send(Array(("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Encoding: gzip\r\nETag: \"v1\"\r\n"
                + "Content-Length: \(gzip.count)\r\n\r\n").utf8) + [UInt8](gzip.prefix(gzip.count / 2)))
        }
        defer { server.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attack87b-cut-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("recordings").appendingPathComponent("session.har")
        let destination = folder.appendingPathComponent("export.txt")
        func leftBehind() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0 != "recordings" }.sorted()
        }

        let recording = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never),
                                    transport: try RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()), responseQueue: .global())
        let recorded = await recording.download(route: .get(server.baseURL + "/export"), to: destination).result
        #expect(apiErrorName(recorded) == "transportFailed", "recorded: \(recorded)")
        #expect(ResumableDownload.pending(for: destination) == nil)
        let afterRecording = try leftBehind()
        #expect(afterRecording.isEmpty, "recorded: \(afterRecording)")

        let replaying = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never),
                                    transport: try RecordingTransport(file: file, mode: .replay), responseQueue: .global())
        let replayed = await replaying.download(route: .get(server.baseURL + "/export"), to: destination).result
        #expect(apiErrorName(replayed) == "transportFailed", "replayed: \(replayed)")
        let pending = ResumableDownload.pending(for: destination)
        #expect(pending == nil, "replayed, a resume of \(pending?.offset ?? 0) bytes is pending (the compressed answer was \(gzip.count) bytes)")
        let afterReplay = try leftBehind()
        #expect(afterReplay.isEmpty, "replayed, left beside the destination: \(afterReplay)")
    }

    func apiErrorName(_ result: Result<DownloadedFile, any Error>) -> String {
        guard case .failure(let error as APIError) = result else { return "\(result)" }
        return error.caseName
    }
}
