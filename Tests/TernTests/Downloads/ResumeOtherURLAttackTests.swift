import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Bytes one file's download left at a destination, taken up by a download of another file to
/// the same destination (as `ResumableDownload.pending(for: destination)` invites) whose server
/// happens to give the same validator (files deployed together share their `Last-Modified`;
/// revision-number `ETag`s repeat) and the same byte where the two meet: the `206` spliced the
/// first file's head onto the second's tail, delivered as complete. Another path's download
/// starts over; the same path's still resumes, whatever its query (a signed link's signature).
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ResumeOtherURLAttackTests {
    typealias Lie = ResumeLie

    @Test(arguments: ["/a", "/a?signature=2", "/b"]) func bytesAnotherFileLeftAreNotResumed(path: String) async throws {
        let a = Lie.body(1)
        // Another file, but for the byte where the two meet.
        let b = Data(repeating: 0x41, count: 1999) + [a[1999]] + Data(repeating: 0x41, count: 1000)
        let server = try Lie.Server { request, _ in
            let (head, rest) = Lie.ranged(request, of: request.hasPrefix("GET /b") ? b : a)
            return head + rest
        }
        defer { server.stop() }
        let directory = try Lie.Directory()
        let resume = try directory.resume(of: a, offset: 2000, from: server.url + "/a?signature=1")
        let file = try await Lie.api().download(route: .get(server.url + path), to: directory.destination, resumingFrom: resume).value
        let sameFile = path.hasPrefix("/a")
        #expect(try Data(contentsOf: file.fileURL) == (sameFile ? a : b))
        #expect(file.resumedBytes == (sameFile ? 1999 : 0))
        #expect(server.header("Range") == [sameFile ? "bytes=1999-" : nil])
    }

    /// A resumed download that ends before it is sent (the delegate stops it, a refresh fails)
    /// keeps naming the URL asked for: its next try of that URL, redirected as before, resumes.
    @Test func aResumeEndedBeforeItWasSentStillNamesTheURLAskedFor() async throws {
        final class Stopping: APIDelegate {
            struct Stop: Error {}
            func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws { throw Stop() }
        }
        let directory = try Lie.Directory()
        let partial = ResumableDownload.partialFile(for: directory.destination)
        try Lie.body(1).prefix(2000).write(to: partial)
        let resume = ResumableDownload(url: URL(string: "http://127.0.0.1:1/v7/file")!, requested: URL(string: "http://127.0.0.1:1/latest")!,
                                       destination: directory.destination, partialFile: partial, offset: 2000, validator: #""v1""#)
        let api = try Lie.api()
        let delegate = Stopping()
        api.delegate = delegate
        let result = await api.download(route: .get("http://127.0.0.1:1/latest"), to: directory.destination, resumingFrom: resume).result
        guard case .failure(APIError.invalidRequest) = result else { Issue.record("expected the delegate to stop it, got \(result)"); return }
        #expect(ResumableDownload.pending(for: directory.destination)?.requested?.absoluteString == "http://127.0.0.1:1/latest")
    }

    /// The record Tern keeps names the URL asked for, before the redirect that answered it: a
    /// download of that URL resumes from it.
    @Test func aRecordNamesTheURLAskedForBeforeItsRedirect() throws {
        let directory = try Lie.Directory()
        let partial = ResumableDownload.partialFile(for: directory.destination)
        try Data(count: 10).write(to: partial)
        let asked = URL(string: "https://user:secret@files.example/latest")!
        try ResumableDownload(url: URL(string: "https://cdn.example/v7/file")!, requested: asked, destination: directory.destination,
                              partialFile: partial, offset: 10, validator: "\"v7\"").record()
        let pending = try #require(ResumableDownload.pending(for: directory.destination))
        #expect(pending.requested?.absoluteString == "https://files.example/latest")
        #expect(pending.isDownload(of: asked) && pending.isDownload(of: URL(string: "https://files.example/latest")!))
        #expect(!pending.isDownload(of: URL(string: "https://cdn.example/v7/file")!))
        #expect(!pending.isDownload(of: URL(string: "https://files.example/other")!))
        #expect(!pending.isDownload(of: URL(string: "http://files.example/latest")!))
        #expect(!pending.isDownload(of: URL(string: "https://files.example:8443/latest")!))
        #expect(pending.isDownload(of: URL(string: "https://FILES.example/latest?signature=2")!))
    }
}
