#if os(Linux)
import Foundation
import Testing
import Tern

/// Chunked bodies over libcurl whose chunks declare more than the body's limit, then hold the
/// connection: libcurl waits for every declared byte, so each ran to the timeout. Now the
/// request fails at once, as for a `Content-Length` over the limit, and the connection goes.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ChunkedBodyTests {
    /// A long timeout: the failures must be the typed errors, not it.
    func api() throws -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 120, retryPolicy: .never), transport: try CurlTransport(), responseQueue: .global())
    }

    static let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked"

    static let declaringTooMuch = [
        "7FFFFFFFFFFFFFFF\r\nhello",
        "7FFFFFFFFFFFFFFF",                                     // the size line not even ended
        "10;name=value\r\n0123456789abcdef\r\n7FFFFFFFFFFFFFFF\r\n",
        "5\r\nhello\r\n4000001\r\nworld",                       // 64 MiB + 1 after five bytes
    ]

    @Test(arguments: declaringTooMuch)
    func chunksDeclaringMoreThanTheLimitFailAtOnce(body: String) async throws {
        let server = try HostileHeadTests.server(head: Self.chunked, body: body)
        defer { server.stop() }
        let api = try api()
        let error = await apiError(of: api.request(route: .get(server.baseURL + "/hostile")) as Promise<Data>)
        guard case .responseTooLarge(let failure)? = error else {
            Issue.record("expected responseTooLarge, got \(String(describing: error))")
            return
        }
        #expect(failure.limit == 64 << 20)
        #expect((failure.declaredLength ?? 0) > 64 << 20)
        #expect(failure.statusCode == 200)
        // The connection went with it: the next request gets its own answer.
        let next: String = try await api.request(route: .get(server.baseURL + "/next")).value
        #expect(next == "next")
    }

    @Test func aDeclaredSizeAtTheLimitIsWaitedFor() async throws {
        let body = "5;ext\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: 7FFFFFFFFFFFFFFF\r\n\r\n"
        let server = try HostileHeadTests.server(head: Self.chunked, body: body)
        defer { server.stop() }
        let answer: String = try await api().request(route: .get(server.baseURL + "/hostile"), options: RequestOptions(maximumResponseSize: 11)).value
        #expect(answer == "hello world")
        let error = await apiError(of: try api().request(route: .get(server.baseURL + "/hostile"), options: RequestOptions(maximumResponseSize: 10)) as Promise<String>)
        #expect(error?.caseName == "responseTooLarge")
    }

    /// An encoded body's chunks are counted against the limit with room for encoding, and its
    /// decoded bytes against the limit itself.
    @Test func anEncodedBodyInChunksIsDecodedUpToTheLimit() async throws {
        let gzip = GzipBomb.make(expandingTo: 64 << 10, checked: true)
        let framed = Data(String(gzip.count, radix: 16).utf8 + Array("\r\n".utf8)) + gzip + Data("\r\n0\r\n\r\n".utf8)
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                connection.send(Array((Self.chunked + "\r\nContent-Encoding: gzip\r\n\r\n").utf8) + Array(framed))
            }
        }
        defer { server.stop() }
        let body: Data = try await api().request(route: .get(server.baseURL + "/gzip"), options: RequestOptions(maximumResponseSize: .init(bytes: 64 << 10))).value
        #expect(body.count >= (64 << 10) - 258 && body.allSatisfy { $0 == 0 })
    }

    /// A download's body goes to its file, whose limit (none by default) is not the one on
    /// bodies kept in memory.
    @Test func aDownloadIsHeldToItsFilesLimitNotToTheMemoryLimit() async throws {
        let server = try HostileHeadTests.server(head: Self.chunked, body: "14\r\n01234567890123456789\r\n0\r\n\r\n")
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 120, maximumResponseSize: 10, retryPolicy: .never),
                              transport: try CurlTransport(), responseQueue: .global())
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-chunked-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        _ = try await api.download(route: .get(server.baseURL + "/hostile"), to: file).value
        #expect(try Data(contentsOf: file) == Data("01234567890123456789".utf8))
    }
}
#endif
