#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import Tern
import TernTesting

/// The sweep of leftover partial files (a download killed before it recorded its bytes) meets a
/// download that is still running. Between two of its attempts (its connection was lost, and
/// its retry waits for the server's answer) a download holds its bytes in no open file, so
/// neither the process's registry of writers nor a record lock says it holds them, and no
/// record names them. The docs promise that the sweep takes a partial file only "once it has
/// gone ten minutes unwritten and no download holds it", and that "a retry after a lost
/// connection goes on from what it has" (UploadsAndDownloads.md): a download whose server went
/// quiet for ten minutes before it cut the connection (its timeout `.infinity`, as the docs
/// advise for a large file) keeps its bytes while it retries, whatever else downloads to its
/// destination meanwhile (the same button tapped again; the same tool run again in another
/// terminal, whose sweep runs the same way).
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct LeftoverSweepAttackTests {
    typealias Lie = ResumeLie

    /// The first attempt is cut after 1,000 of 3,000 bytes; its retry asks for the rest and is
    /// answered only once the test says so. Meanwhile the partial file is made ten minutes
    /// unwritten (as after a stall), and a second download to the same destination starts and
    /// finishes. The first download then gets its 206: it must deliver the whole file (resumed,
    /// or started over), never fail because its bytes were swept from under it.
    @Test func aDownloadBetweenAttemptsKeepsItsBytesFromTheLeftoverSweep() async throws {
        let directory = try Lie.Directory()
        let body = Lie.body(1)
        let go = Lie.Shared(false)
        let server = try Lie.Server(closesAfter: { $0 == 1 }) { request, index in
            if let range = Lie.header("Range", in: request), let start = Int(range.dropFirst("bytes=".count).dropLast()) {
                // Held until the test has swept, and then the rest, as asked.
                let deadline = Date(timeIntervalSinceNow: 20)
                while !go.value, Date() < deadline { usleep(10_000) }
                return Lie.answer("206 Partial Content", "ETag: \"v1\"\r\nContent-Range: bytes \(start)-2999/3000\r\n",
                                  body: body.suffix(from: start))
            }
            let whole = Lie.answer("200 OK", "ETag: \"v1\"\r\n", body: body)
            // The first answer is cut after 1,000 bytes of its body.
            return index == 1 ? Array(whole.dropLast(2000)) : whole
        }
        defer { server.stop() }
        let api = try Lie.api(retryPolicy: RetryPolicy(maxRetries: 3, baseDelay: 0.01, jitter: false))
        let first = api.download(route: .get(server.url + "/file"), to: directory.destination, replacing: true,
                                 options: RequestOptions(timeout: .infinity))
        // The retry has been sent: the bytes are on disk, in no open file.
        #expect(await eventually(timeout: 10) { server.header("Range").contains("bytes=999-") })
        let partials = directory.partialFiles
        try #require(partials.count == 1, "\(directory.files)")
        let partial = partials[0]
        #expect((try? Data(contentsOf: partial)) == body.prefix(1000))
        // The server went quiet for ten minutes before the connection was lost.
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -660)], ofItemAtPath: partial.path)

        // The same download, started again meanwhile.
        let second = try await api.download(route: .get(server.url + "/file"), to: directory.destination, replacing: true).value
        #expect(try Data(contentsOf: second.fileURL) == body)
        // Its sweep runs off its request's path: given time.
        _ = await eventually(timeout: 3) { !FileManager.default.fileExists(atPath: partial.path) }
        let swept = !FileManager.default.fileExists(atPath: partial.path)

        go.value = true
        let result = await first.result
        switch result {
        case .success(let file):
            #expect(try Data(contentsOf: file.fileURL) == body)
        case .failure(let error):
            Issue.record("the running download failed (its partial file swept meanwhile: \(swept)): \(error)")
        }
    }

    /// Another process's sweep has only the file's time to go by: between attempts no lock
    /// holds the file. The first attempt writes exactly a mebibyte (what is gathered is written
    /// a mebibyte at a time, so closing the file writes nothing more), the server goes quiet for
    /// ten minutes (the file's time set back so), then cuts the connection. While the retry
    /// waits, the file must look written now, or the sweep of a download in another process
    /// would take it.
    @Test func aFileClosedBetweenAttemptsLooksWrittenNow() async throws {
        let directory = try Lie.Directory()
        let body = Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let (cut, answer) = (Lie.Shared(false), Lie.Shared(false))
        let requests = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                requests.append(request)
                guard let range = Lie.header("Range", in: request), let start = Int(range.dropFirst("bytes=".count).dropLast()) else {
                    let head = "HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nContent-Length: \(body.count)\r\n\r\n"
                    guard connection.send(Array(head.utf8) + [UInt8](body.prefix(1 << 20))) else { return }
                    let deadline = Date(timeIntervalSinceNow: 20)
                    while !cut.value, Date() < deadline { usleep(10_000) }
                    return
                }
                let deadline = Date(timeIntervalSinceNow: 20)
                while !answer.value, Date() < deadline { usleep(10_000) }
                _ = connection.send(Lie.answer("206 Partial Content", "ETag: \"v1\"\r\nContent-Range: bytes \(start)-\(body.count - 1)/\(body.count)\r\n",
                                               body: body.suffix(from: start)))
            }
        }
        defer { server.stop() }
        let api = try Lie.api(retryPolicy: RetryPolicy(maxRetries: 3, baseDelay: 0.01, jitter: false))
        let download = api.download(route: .get(server.baseURL + "/file"), to: directory.destination, replacing: true,
                                    options: RequestOptions(timeout: .infinity))
        let written = await eventually(timeout: 10) {
            directory.partialFiles.first.map { (try? FileManager.default.attributesOfItem(atPath: $0.path))?[.size] as? Int == 1 << 20 } ?? false
        }
        try #require(written, "\(directory.files)")
        let partial = directory.partialFiles[0]
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -660)], ofItemAtPath: partial.path)
        cut.value = true
        #expect(await eventually(timeout: 10) { requests.items.contains { Lie.header("Range", in: $0) != nil } })
        let stamped = (try FileManager.default.attributesOfItem(atPath: partial.path))[.modificationDate] as? Date
        #expect(stamped.map { -$0.timeIntervalSinceNow < 60 } == true, "the file kept its time: \(String(describing: stamped))")
        answer.value = true
        let file = try await download.value
        #expect(try Data(contentsOf: file.fileURL) == body)
    }
}
