#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import Tern
import TernTesting

/// A download from a URL that carries its credentials (a user and password, as
/// `https://alice:pass@host/` sends them; a signed link's key in its query) is cut off, and Tern
/// records it beside the destination for `ResumableDownload.pending(for:)`, as JSON that holds
/// the URL, password and all, in a file created with the process's umask (0644 under the usual
/// 022): in `/tmp`, or a shared downloads folder, every local user reads the password. Tern's
/// other files hold themselves to better: CachingResponses.md, "a URL's user and password are
/// not part of the key written to disk, but the rest of the URL is, a key in its query
/// (`?api_key=`) included, in files only their owner can read"; Security.md, the cookie jar's
/// file is "written atomically, mode 0600"; and every error description hides the password
/// (`alice:***`). The record's URL is never sent again (the app gives the route anew): it
/// needs no password.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ResumeRecordSecretAttackTests {
    typealias Lie = ResumeLie

    @Test func theResumeRecordKeepsNoPasswordAndOnlyItsOwnerReadsIt() async throws {
        let directory = try Lie.Directory()
        let body = Lie.body(1)
        // Cut after 1,000 of 3,000 bytes, with a strong validator: the bytes are kept, and recorded.
        let server = try Lie.Server(closesAfter: { _ in true }) { _, _ in
            Array(Lie.answer("200 OK", "ETag: \"v1\"\r\n", body: body).dropLast(2000))
        }
        defer { server.stop() }
        let api = try Lie.api()
        let url = server.url.replacingOccurrences(of: "http://", with: "http://alice:s3cret-pass@") + "/export.zip?api_key=k3y-in-query"
        let result = await Lie.result(of: api.download(route: .get(url), to: directory.destination))
        #expect(throws: (any Error).self) { try result.get() }
        #expect(!"\(result)".contains("s3cret-pass"), "the error tells the password")
        let resume = try #require(ResumableDownload.pending(for: directory.destination))
        #expect(resume.offset == 1000)

        let record = ResumableDownload.recordFile(for: directory.destination)
        let text = try String(contentsOf: record, encoding: .utf8)
        #expect(!text.contains("s3cret-pass"), "the record beside the destination holds the URL's password: \(text)")
        var status = stat()
        try #require(stat(record.path, &status) == 0)
        #expect(status.st_mode & 0o077 == 0, "the record, with the URL's key in its query, is mode \(String(status.st_mode & 0o777, radix: 8)) under umask \(String(Self.umaskNow(), radix: 8))")
    }

    /// The process's umask, as Linux tells it (`Umask:` in `/proc/self/status`), without changing it.
    static func umaskNow() -> mode_t {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("Umask:") }
        return line.flatMap { mode_t($0.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8) } ?? 0
    }
}
