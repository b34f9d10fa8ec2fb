import Foundation
import Testing
@testable import Tern
import TernTesting

/// A download that asks for a range of its own (the first kilobyte of a file: a header to read,
/// a preview; a video's first segment), cut off midway and retried. UploadsAndDownloads.md:
/// "A `Range` of your own is yours: its 206 is kept", and "A retry after a lost connection goes
/// on from what it has, in the same way". The retry asks for the rest from the last byte held,
/// `Range: bytes=<offset - 1>-`, in place of the request's own range: open-ended, it is
/// answered with everything to the end of the file, which is appended and delivered as the
/// part asked for. The download asked for 1,000 bytes of a 3,000-byte file and delivers all
/// 3,000 (of a file of gigabytes, it downloads gigabytes). Never a silently wrong answer.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct OwnRangeRetryAttackTests {
    typealias Lie = ResumeLie

    /// The bytes a `Range` value asks for of a file of `count` bytes: `bytes=a-b` or `bytes=a-`.
    static func bounds(_ range: String, of count: Int) -> (Int, Int)? {
        let spec = range.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
        guard spec.count == 2, let start = Int(spec[0]) else { return nil }
        return (start, min(Int(spec[1]) ?? count - 1, count - 1))
    }

    @Test func aRangeOfItsOwnRetriedDeliversThatRangeOnly() async throws {
        let directory = try Lie.Directory()
        let body = Lie.body(1)   // 3,000 bytes, ETag "v1"
        // The first answer is cut after 500 of its 1,000 bytes; every answer honours the range asked.
        let server = try Lie.Server(closesAfter: { $0 == 1 }) { request, index in
            guard let range = Lie.header("Range", in: request), let (start, end) = Self.bounds(range, of: body.count) else {
                return Lie.answer("200 OK", "ETag: \"v1\"\r\n", body: body)
            }
            let part = body[start...end]
            let head = Array("HTTP/1.1 206 Partial Content\r\nETag: \"v1\"\r\nContent-Range: bytes \(start)-\(end)/\(body.count)\r\nContent-Length: \(part.count)\r\n\r\n".utf8)
            return index == 1 ? head + part.prefix(500) : head + part
        }
        defer { server.stop() }
        let api = try Lie.api(retryPolicy: RetryPolicy(maxRetries: 2, baseDelay: 0.01, jitter: false))
        let file = try await api.download(route: .get(server.url + "/video.mp4"), parameters: Lie.Headers(values: ["Range": "bytes=0-999"]),
                                          to: directory.destination).value
        let delivered = try Data(contentsOf: file.fileURL)
        #expect(server.header("Range").first == "bytes=0-999")
        #expect(delivered.count == 1000 && delivered == body.prefix(1000),
                "asked for bytes 0-999, delivered \(delivered.count) bytes; the ranges asked: \(server.header("Range"))")
    }
}
