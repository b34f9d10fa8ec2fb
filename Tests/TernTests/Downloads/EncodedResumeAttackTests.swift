#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// Downloads cut short and resumed, where the wire compresses: a body in gzip cut short keeps
/// nothing to resume from (its bytes on disk are undone, its offsets the compressed stream's);
/// a resume answered with a `206` in gzip, which a range of the stored body must not be,
/// either finishes the very file or fails typed, never a file of other bytes; so does one
/// whose `Content-Range` is given twice.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct EncodedResumeAttackTests {
    static let body = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) })

    static func api() -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
    }

    static func scratch() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-encoded-resume-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// A gzip body with a strong `ETag`, its connection closed halfway: the download fails
    /// typed, and nothing is kept to resume from, no partial file beside the destination.
    @Test func aCompressedBodyCutShortKeepsNothingToResume() async throws {
        let gzip = GzipStream.stored(Self.body)
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            connection.send(Array("HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nContent-Encoding: gzip\r\nContent-Length: \(gzip.count)\r\n\r\n".utf8) + [UInt8](gzip.prefix(gzip.count / 2)))
        }
        defer { server.stop() }
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let destination = directory.appendingPathComponent("file.bin")
        let result = await Self.api().download(route: .get(server.baseURL + "/file"), to: destination).result
        guard case .failure(APIError.transportFailed) = result else {
            Issue.record("expected transportFailed, got \(result)")
            return
        }
        #expect(ResumableDownload.pending(for: destination) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    /// A plain body cut at 70,000 bytes, kept to resume; the resume (`Range: bytes=70000-`) is
    /// answered `206` with the rest in gzip (`whole`: a gzip of the rest; else the compressed
    /// whole's bytes from that offset). The download ends with the very body, or fails typed and
    /// leaves no file at the destination.
    @Test(arguments: [true, false])
    func aResumeAnsweredInGzipFinishesTheFileOrFails(whole: Bool) async throws {
        let rest = Self.body.suffix(from: 70_000)
        let compressed = whole ? GzipStream.stored(Data(rest)) : Data(GzipStream.stored(Self.body).suffix(from: 70_000))
        let ranges = Recorder<String>()
        let server = try RawServer { connection in
            guard let request = connection.readRequest() else { return }
            if let range = request.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("range:") }) {
                ranges.append(String(range))
                connection.send(Array(("HTTP/1.1 206 Partial Content\r\nETag: \"v1\"\r\nContent-Encoding: gzip\r\n"
                    + "Content-Range: bytes 70000-199999/200000\r\nContent-Length: \(compressed.count)\r\n\r\n").utf8) + [UInt8](compressed))
            } else {
                connection.send(Array("HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nContent-Length: \(Self.body.count)\r\n\r\n".utf8) + [UInt8](Self.body.prefix(70_000)))
            }
        }
        defer { server.stop() }
        try await Self.expectTheVeryBodyOrNothingAfterResuming(from: server) { #expect($0.resume.offset == 70_000) }
        #expect(ranges.items.count == 1)
    }

    /// The resume answered `206` with its `Content-Range` given twice (the same range, or a
    /// second from the start): joined with a comma, the two are no one range. The download ends
    /// with the very body, or fails typed and leaves no file: never the rest appended at the
    /// wrong offset.
    @Test(arguments: ["bytes 70000-199999/200000", "bytes 0-129999/200000"])
    func aResumeWhoseRangeIsGivenTwiceFinishesTheFileOrFails(second: String) async throws {
        let rest = Self.body.suffix(from: 70_000)
        let server = try RawServer { connection in
            guard let request = connection.readRequest() else { return }
            if request.lowercased().contains("\r\nrange:") {
                connection.send(Array(("HTTP/1.1 206 Partial Content\r\nETag: \"v1\"\r\nContent-Range: bytes 70000-199999/200000\r\n"
                    + "Content-Range: \(second)\r\nContent-Length: \(rest.count)\r\n\r\n").utf8) + [UInt8](rest))
            } else {
                connection.send(Array("HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nContent-Length: \(Self.body.count)\r\n\r\n".utf8) + [UInt8](Self.body.prefix(70_000)))
            }
        }
        defer { server.stop() }
        try await Self.expectTheVeryBodyOrNothingAfterResuming(from: server)
    }

    /// A download from `server` cut, then resumed (`checkingCut` checks the cut first): it ends
    /// with the very body, or fails typed and leaves no file at the destination.
    static func expectTheVeryBodyOrNothingAfterResuming(from server: RawServer, checkingCut: (CutDownload) -> Void = { _ in }) async throws {
        let api = Self.api()
        guard let cut = try await CutDownload.make(api, url: server.baseURL + "/file") else { return }
        defer { try? FileManager.default.removeItem(at: cut.directory) }
        checkingCut(cut)
        let resumed = await api.download(route: .get(server.baseURL + "/file"), to: cut.destination, resumingFrom: cut.resume).result
        switch resumed {
        case .success(let file):
            #expect(try Data(contentsOf: file.fileURL) == Self.body, "a file of other bytes")
        case .failure(let error):
            #expect(error is APIError, "\(error)")
            #expect(!FileManager.default.fileExists(atPath: cut.destination.path))
        }
    }
}
#endif
