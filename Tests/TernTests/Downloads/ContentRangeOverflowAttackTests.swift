// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
import TernTesting

/// A `206` whose `Content-Range` ends at the last byte an `Int64` can number
/// (`bytes 0-9223372036854775807/*`, a length the server says it does not know): a hostile or
/// broken server's answer to a download. UploadsAndDownloads.md promises: "A 206 to a download
/// that asked for no range is the file only when its `Content-Range` is the whole of it; any
/// other part fails with `APIError.transportFailed` (a `badServerResponse`), never a file cut
/// short delivered as complete", and for a resume, "a 206 from elsewhere ... starts over". The
/// download must settle, typed; instead `DownloadFile.target(for:)` adds one to the range's end
/// (`range.total == range.end + 1`, and `range.total ?? range.end + 1` for a resume), the
/// addition overflows, and the process traps: a server crashes the app that downloads from
/// it. Run in a child process (an exit test), so that the trap fails this test alone.
@Suite(.onTestThreads, .exitTest) struct ContentRangeOverflowAttackTests {
    /// A fresh download (no range asked for) answered `206` with a range ending at
    /// `Int64.max` and no total: a typed failure, no file, the child alive.
    @Test func aPartEndingAtTheLargestOffsetFailsTyped() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("attack87b-range-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-9223372036854775807/*\r\n"
                + "Content-Length: 4\r\nETag: \"v1\"\r\nConnection: close\r\n\r\nabcd")
        }
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                [url = server.baseURL as String, work = work.path as String] in
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never),
                                      transport: TestTransport.make(), responseQueue: .global())
                let destination = URL(fileURLWithPath: work).appendingPathComponent("file.bin")
                switch await api.download(route: .get(url + "/file"), to: destination).result {
                case .success(let file): print("delivered \((try? Data(contentsOf: file.fileURL))?.count ?? -1)")
                case .failure(let error): print("failed \(error)")
                }
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(printed.hasPrefix("failed"), "\(printed)")
        #expect(!FileManager.default.fileExists(atPath: work.appendingPathComponent("file.bin").path))
    }

    /// A download cut short after 5 of its 10 bytes (strong `ETag`, so they are kept), whose
    /// retry asks for `bytes=4-` and is answered with a `206` from there to `Int64.max`, of no
    /// known total: the resume starts over or fails typed, the child alive.
    @Test func aResumedPartEndingAtTheLargestOffsetFailsTypedOrStartsOver() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("attack87b-range-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let ranges = Recorder<String>()
        let server = try RawServer { connection in
            guard let request = connection.readRequest() else { return }
            let range = request.split(separator: "\r\n").first { $0.lowercased().hasPrefix("range:") }.map(String.init)
            ranges.append(range ?? "none")
            if range == nil {
                _ = connection.send("HTTP/1.1 200 OK\r\nContent-Length: 10\r\nETag: \"v1\"\r\nConnection: close\r\n\r\nabcde")
            } else {
                _ = connection.send("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 4-9223372036854775807/*\r\n"
                    + "Content-Length: 6\r\nETag: \"v1\"\r\nConnection: close\r\n\r\nefghij")
            }
        }
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                [url = server.baseURL as String, work = work.path as String] in
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 20), transport: TestTransport.make(), responseQueue: .global())
                let destination = URL(fileURLWithPath: work).appendingPathComponent("file.bin")
                var outcome: String
                switch await api.download(route: .get(url + "/file"), to: destination).result {
                case .success(let file): outcome = "delivered \((try? Data(contentsOf: file.fileURL))?.count ?? -1)"
                case .failure(let error): outcome = "failed \(error)"
                }
                if outcome.hasPrefix("failed"), let resume = ResumableDownload.pending(for: destination) {
                    switch await api.download(route: .get(url + "/file"), to: destination, resumingFrom: resume).result {
                    case .success(let file): outcome += "; resumed, delivered \((try? Data(contentsOf: file.fileURL))?.count ?? -1)"
                    case .failure(let error): outcome += "; resumed, failed \(error)"
                    }
                }
                print(outcome)
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(!printed.isEmpty, "the child printed nothing; the server was asked for \(ranges.items)")
        #expect(ranges.items.contains { $0.contains("bytes=4-") }, "\(ranges.items)")
    }
}
#endif
