#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// Recordings of answers the wire lied in: a compression bomb stopped at the body limit, a
/// compressed body that is not its encoding (cut short inside, or followed by other bytes),
/// a whole compressed body whose connection closed before its announced length. Each failed
/// typed as it was recorded; replayed, each fails again, typed, whatever the replaying API's
/// limit: never the bytes that came before the failure, handed over as a whole answer.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingWireLieAttackTests {
    /// A server that answers every request with `head` (a `Content-Length` of `announced`, or
    /// of `body`'s length) and `body`, then closes the connection.
    static func server(head: String, body: Data, announced: Int? = nil) throws -> RawServer {
        try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            connection.send(Array("\(head)\r\nContent-Length: \(announced ?? body.count)\r\n\r\n".utf8) + [UInt8](body))
        }
    }

    /// Records one GET of `/lie` from `server` with a body limit of `limit`, and returns the
    /// recording's file and what the request came to.
    static func record(from server: RawServer, limit: SizeLimit) async throws -> (file: URL, result: Result<Data, any Error>) {
        let file = scratchRecording()
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, maximumResponseSize: limit, retryPolicy: .never),
                              transport: try RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()), responseQueue: .global())
        let result = await (api.request(route: .get(server.baseURL + "/lie")) as Promise<Data>).result
        return (file, result)
    }

    /// Replays the GET of `/lie` at `url` from `file`, with a body limit of `limit`.
    static func replay(_ file: URL, url: String, limit: SizeLimit) async throws -> Result<Data, any Error> {
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, maximumResponseSize: limit, retryPolicy: .never),
                              transport: try RecordingTransport(file: file, mode: .replay), responseQueue: .global())
        return await (api.request(route: .get(url + "/lie")) as Promise<Data>).result
    }

    /// Expects `result` a typed failure, not an answer.
    static func expectFailedTyped(_ result: Result<Data, any Error>, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        switch result {
        case .success(let body): Issue.record("\(what): an answer of \(body.count) bytes", sourceLocation: sourceLocation)
        case .failure(let error): #expect(error is APIError, "\(what): \(error)", sourceLocation: sourceLocation)
        }
    }

    /// A bomb of 64 MiB, recorded through a limit of 1 MiB: too large then, and replayed through
    /// the same limit or none, a failure still, not the megabyte that came before it stopped.
    @Test func aBombStoppedAtTheLimitIsNotReplayedAsAWholeBody() async throws {
        let server = try Self.server(head: "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Encoding: gzip",
                                     body: WireBomb.gzip(repeating: 0, count: 64 << 20, checked: false))
        let url = server.baseURL
        let (file, recorded) = try await Self.record(from: server, limit: .megabytes(1))
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        server.stop()
        guard case .failure(APIError.responseTooLarge) = recorded else {
            Issue.record("expected responseTooLarge, got \(recorded)")
            return
        }
        Self.expectFailedTyped(try await Self.replay(file, url: url, limit: .megabytes(1)), "replayed with the limit")
        Self.expectFailedTyped(try await Self.replay(file, url: url, limit: .unlimited), "replayed without a limit")
    }

    static let text = ContentEncodingTests.text
    static let gzip = GzipStream.stored(text)

    /// Compressed bodies that are not their encoding, their framing whole: libcurl, through
    /// Tern, refuses them (FoundationNetworking takes some for whole ones).
    @Test(.enabled(if: TestTransport.isCurl, "FoundationNetworking's libcurl takes a gzip stream cut short for a whole one"),
          arguments: [("cut short inside", gzip.prefix(gzip.count / 2)), ("followed by other bytes", gzip + Data("more".utf8))])
    func aBodyThatIsNotItsEncodingIsNotReplayedWhole(_ what: String, body: Data) async throws {
        let server = try Self.server(head: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip", body: body)
        try await Self.expectRecordedAndReplayedAsFailures(from: server)
    }

    /// A whole gzip stream whose connection closes before the length its head announced: the
    /// text undone is all there, but the answer was cut; recorded and replayed as a failure.
    @Test func aWholeStreamOnACutConnectionIsNotReplayedWhole() async throws {
        let server = try Self.server(head: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip", body: Self.gzip,
                                     announced: Self.gzip.count + 1_000)
        try await Self.expectRecordedAndReplayedAsFailures(from: server)
    }

    /// An answer from `server` recorded, the server stopped, and the recording replayed: a typed
    /// failure both times.
    static func expectRecordedAndReplayedAsFailures(from server: RawServer) async throws {
        let url = server.baseURL
        let (file, recorded) = try await Self.record(from: server, limit: .unlimited)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        server.stop()
        Self.expectFailedTyped(recorded, "recorded")
        Self.expectFailedTyped(try await Self.replay(file, url: url, limit: .unlimited), "replayed")
    }
}
#endif
