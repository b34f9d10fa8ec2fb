import Foundation
import Testing
@testable import Tern

extension RawServer {
    /// A server of one body kept fresh for ten minutes under an `ETag`: it answers a
    /// `Range: bytes=N-` with the rest in a `206`, and anything else with the whole in a `200`,
    /// or with its first 40,000 bytes and a closed connection when `version` says to cut.
    /// `version` is asked once a request: what to send (the body and its tag) and whether to cut.
    static func rangedBody(
        version: @escaping @Sendable () -> (body: Data, etag: String, cutsWhole: Bool)
    ) throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let (body, etag, cutsWhole) = version()
                let size = body.count
                let tag = "ETag: \(etag)\r\nCache-Control: max-age=600\r\n"
                if let range = request.components(separatedBy: "\r\n").first(where: { $0.lowercased().hasPrefix("range: bytes=") }),
                   let start = Int(range.dropFirst("range: bytes=".count).prefix { $0 != "-" }) {
                    let head = "HTTP/1.1 206 Partial Content\r\n\(tag)Content-Range: bytes \(start)-\(size - 1)/\(size)\r\nContent-Length: \(size - start)\r\n\r\n"
                    guard connection.send(head), connection.send(Array(body[start...])) else { return }
                    continue
                }
                guard connection.send("HTTP/1.1 200 OK\r\n\(tag)Content-Length: \(size)\r\n\r\n") else { return }
                if cutsWhole {
                    connection.send(Array(body[..<40_000]))
                    return
                }
                guard connection.send(Array(body)) else { return }
            }
        }
    }
}

/// A download that the server cut (as ``RawServer/rangedBody(version:)`` does): made into a new
/// temporary directory, it failed with `transportFailed` and left a resume pending.
struct CutDownload {
    /// The directory the download was made in: the caller removes it.
    let directory: URL
    /// Where the download was to go.
    let destination: URL
    /// The download's pending resume.
    let resume: ResumableDownload

    /// Downloads `url` with `api`, expecting the server to cut it; `nil` (with the issue
    /// recorded) if it did not fail as a cut download fails.
    static func make(_ api: AbstractAPI, url: String) async throws -> CutDownload? {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-cut-download-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let destination = directory.appendingPathComponent("file.bin")
        let cut = await api.download(route: .get(url), to: destination).result
        guard case .failure(APIError.transportFailed) = cut else {
            Issue.record("expected transportFailed, got \(cut)")
            try? FileManager.default.removeItem(at: directory)
            return nil
        }
        guard let resume = ResumableDownload.pending(for: destination) else {
            Issue.record("no resume pending for \(destination.path)")
            try? FileManager.default.removeItem(at: directory)
            return nil
        }
        return CutDownload(directory: directory, destination: destination, resume: resume)
    }
}
