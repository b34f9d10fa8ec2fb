import Foundation
import Testing
@testable import Tern
import TernTesting
import TernTransport

/// A download to a destination whose name the file system takes: a title of 69 Japanese
/// characters, 211 bytes of UTF-8 of the 255 a Linux name may have (a name made from a
/// document's title, or from a server's `Content-Disposition`).
/// UploadsAndDownloads.md promises: "`download(route:to:)` streams a response's body to a file
/// ... The body goes to a hidden file beside the destination and is moved there only when it is
/// complete and accepted". The hidden file is named `.<name>.<UUID>.tern-partial`
/// (`ResumableDownload.partialFile(for:)`), 52 bytes longer than the destination's name: for any
/// name over 203 bytes (68 characters of Japanese) past the file system's limit, it cannot be
/// made, and a download to a path any other library (or
/// `Data.write(to:)`) writes fails, after the whole request was sent and answered.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct LongDestinationNameAttackTests {
    @Test func aDestinationTheFileSystemTakesIsDownloadedTo() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("attack87b-long-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // 69 characters, 211 bytes of UTF-8: a title in Japanese.
        let destination = folder.appendingPathComponent(String(repeating: "報告書", count: 23) + ".pdf")
        // The file system takes the name: the file can be written there.
        try Data("probe".utf8).write(to: destination)
        try FileManager.default.removeItem(at: destination)

        let body = Data(repeating: 0x25, count: 100_000)
        let server = try LoopbackServer { request in .file(body, for: request, etag: "\"v1\"") }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        let result = await api.download(route: .get(server.baseURL + "/report.pdf"), to: destination).result
        switch result {
        case .success(let file): #expect((try? Data(contentsOf: file.fileURL)) == body)
        case .failure(let error): Issue.record("the download failed: \(error)")
        }
    }

    /// The names Tern's hidden files take beside a long name fit, and two long names that
    /// differ only at their ends share none.
    @Test func theHiddenNamesBesideALongNameFitAndStayApart() {
        let long = String(repeating: "報告書", count: 28)   // 252 bytes
        let other = String(long.dropLast()) + "x"
        #expect(OwnFiles.stem(of: "report.pdf") == "report.pdf")
        for name in [long, other] {
            let partial = ResumableDownload.partialFile(for: URL(fileURLWithPath: "/tmp/" + name)).lastPathComponent
            #expect(partial.utf8.count <= 255, "\(partial.utf8.count) bytes")
        }
        #expect(OwnFiles.stem(of: long) != OwnFiles.stem(of: other))
    }
}
