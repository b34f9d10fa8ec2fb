#if os(Linux)
import Foundation
import FoundationNetworking
import Testing
import Tern
import TernTesting

/// HTTP/2 (over libcurl, whatever `TERN_TEST_TRANSPORT` says: the suite makes its own
/// `CurlTransport` trusting the test authority) where it meets the cache, downloads, credential
/// refreshes and the head limit: a `HEAD` answered with DATA frames, a download and a cacheable
/// answer whose stream is reset mid-body with REFUSED_STREAM, CANCEL or INTERNAL_ERROR, `103`s
/// before a `401`, and a head that never ends. Seams no test covered over HTTP/2.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct HTTP2FeatureSeamAttackTests {
    static let endStream: UInt8 = 0x1
    static let endHeaders: UInt8 = 0x4
    // HPACK's static table.
    static let cacheControl = 24, contentLength = 28, contentRange = 30, contentType = 31, etag = 34

    static func api(_ server: ScriptedHTTP2Server, cache: HTTPCache? = nil, retryPolicy: RetryPolicy = .never) throws -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: retryPolicy, cache: cache),
                    transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
    }

    /// Numbers the requests a server is asked, from 1.
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func next() -> Int { lock.withLock { count += 1; return count } }
    }

    /// A header block: `:status` (a literal on its static name, index 8), then `fields`
    /// (static indexes, literals without indexing, values under 128 bytes).
    static func block(status: String, _ fields: [(index: Int, value: String)]) -> Data {
        var block = Data(status == "200" ? [0x88] : [0x08, UInt8(status.utf8.count)] + Array(status.utf8))
        for (index, value) in fields {
            block.append(contentsOf: [0x0f, UInt8(index - 15), UInt8(value.utf8.count)])
            block.append(contentsOf: value.utf8)
        }
        return block
    }

    static func result<T>(_ body: () async throws -> T) async -> Result<T, any Error> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }

    // MARK: HEAD with a body

    /// A `HEAD` (the first request) answered with a cacheable `200` whose DATA frames carry a
    /// body ("evil"), then `GET`s of the same URL answered "good". CachingResponses.md / RFC
    /// 9111: a `HEAD`'s answer has no body and is never what a `GET` gets; "never a silently
    /// wrong answer": the `HEAD`'s response has an empty body (or fails typed), and each `GET`
    /// gets "good".
    @Test(arguments: [true, false]) func aHeadAnsweredWithDataIsNeverAGetsBody(withLength: Bool) async throws {
        let counter = Counter()
        let server = try ScriptedHTTP2Server { request, connection in
            let number = counter.next()
            let body = number == 1 ? "evil" : "good"
            var fields: [(index: Int, value: String)] = [(Self.contentType, "text/plain"), (Self.cacheControl, "max-age=600"), (Self.etag, "\"\(body)\"")]
            if withLength { fields.append((Self.contentLength, "4")) }
            connection.send(.headers, Self.endHeaders, request.stream, Self.block(status: "200", fields))
            connection.send(.data, Self.endStream, request.stream, Data(body.utf8))
        }
        let api = try Self.api(server, cache: HTTPCache())
        let url = server.url + "/thing"
        switch await Self.result({ try await api.request(route: .head(url)).value as Response }) {
        case .success(let head): #expect(head.body.isEmpty, "a HEAD's response carried a body: \(String(decoding: head.body, as: UTF8.self))")
        case .failure(let error): #expect(error is APIError, "untyped: \(error)")
        }
        for _ in 0..<2 {
            let get: Response = try await api.request(route: .get(url)).value
            #expect(String(decoding: get.body, as: UTF8.self) == "good")
        }
    }

    // MARK: A download reset mid-body

    static let fileBody = Data((0..<12_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 7) })
    static let half = 6_000

    /// A download whose first answer (a `200` with a strong `ETag`) is reset mid-body, after
    /// half its bytes, by RST_STREAM with `code`; the next request is answered with a `206`
    /// from the byte before the half (as Tern asks: `Range: bytes=<offset - 1>-`), any later
    /// one with the whole `200`. UploadsAndDownloads.md: "Cut off, cancelled or timed out: the
    /// bytes that arrived are kept when they can be resumed"; the resumed file is the server's
    /// file, byte for byte; every promise settles once with a typed `APIError`.
    @Test(arguments: [UInt32(7), 8, 2]) func aDownloadResetMidBodyFailsTypedAndResumesWhole(code: UInt32) async throws {
        let counter = Counter()
        let body = Self.fileBody, half = Self.half
        let server = try ScriptedHTTP2Server { request, connection in
            let stream = request.stream
            switch counter.next() {
            case 1:
                connection.send(.headers, Self.endHeaders, stream, Self.block(status: "200", [(Self.contentType, "application/octet-stream"), (Self.etag, "\"v1\""), (Self.contentLength, String(body.count))]))
                connection.send(.data, 0, stream, body.prefix(half))
                usleep(200_000)
                connection.send(.reset, 0, stream, Data([UInt8(code >> 24), UInt8(code >> 16 & 0xff), UInt8(code >> 8 & 0xff), UInt8(code & 0xff)]))
            case 2:
                let rest = body.suffix(from: half - 1)
                connection.send(.headers, Self.endHeaders, stream, Self.block(status: "206", [
                    (Self.contentType, "application/octet-stream"), (Self.etag, "\"v1\""), (Self.contentLength, String(rest.count)),
                    (Self.contentRange, "bytes \(half - 1)-\(body.count - 1)/\(body.count)")]))
                connection.send(.data, Self.endStream, stream, Data(rest))
            default:
                connection.send(.headers, Self.endHeaders, stream, Self.block(status: "200", [(Self.contentType, "application/octet-stream"), (Self.etag, "\"v1\""), (Self.contentLength, String(body.count))]))
                connection.send(.data, Self.endStream, stream, body)
            }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-h2-reset-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let destination = directory.appendingPathComponent("file.bin")
        let api = try Self.api(server)
        let url = server.url + "/file.bin"

        let first = await Self.result({ try await api.download(route: .get(url), to: destination).value })
        switch first {
        case .success(let file):
            Issue.record("a stream reset (code \(code)) mid-body was delivered as a file of \((try? Data(contentsOf: file.fileURL).count) ?? -1) bytes")
            return
        case .failure(let error):
            #expect(error is APIError, "untyped: \(error)")
        }
        let pending = ResumableDownload.pending(for: destination)
        #expect(pending != nil, "the bytes of a download reset mid-body (code \(code)) were not kept for a resume")
        #expect(pending.map { $0.offset } == Int64(half))
        let file = try await api.download(route: .get(url), to: destination, replacing: true, resumingFrom: pending).value
        #expect(try Data(contentsOf: file.fileURL) == body, "code \(code)")
    }
    // MARK: Early hints before a 401

    /// A delegate that refreshes at once, counting its refreshes.
    final class Refresher: APIDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        var refreshes: Int { lock.withLock { count } }
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer \(lock.withLock { count })", forHTTPHeaderField: "Authorization")
        }
        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            lock.withLock { count += 1 }
            return Promise(value: (), in: .global())
        }
    }

    /// Every stream gets a `103 Early Hints` first; the first then a `401` (with a body), the
    /// second the answer. Authentication.md: a refused request refreshes its credentials once and
    /// is sent again; the `103` is no final answer (RFC 9110 §15.2): the request gets "ok"
    /// after exactly one refresh.
    @Test(arguments: [false, true]) func earlyHintsBeforeA401StillRefreshOnceAndAnswer(bodyOn401: Bool) async throws {
        let counter = Counter()
        let server = try ScriptedHTTP2Server { request, connection in
            let stream = request.stream
            connection.send(.headers, Self.endHeaders, stream, Self.block(status: "103", [(45, "</a.css>; rel=preload")]))
            if counter.next() == 1 {
                if bodyOn401 {
                    connection.send(.headers, Self.endHeaders, stream, Self.block(status: "401", [(Self.contentType, "text/plain"), (Self.contentLength, "6")]))
                    connection.send(.data, Self.endStream, stream, Data("denied".utf8))
                } else {
                    connection.send(.headers, Self.endHeaders | Self.endStream, stream, Self.block(status: "401", [(Self.contentLength, "0")]))
                }
            } else {
                connection.send(.headers, Self.endHeaders, stream, Self.block(status: "200", [(Self.contentType, "text/plain"), (Self.contentLength, "2")]))
                connection.send(.data, Self.endStream, stream, Data("ok".utf8))
            }
        }
        let api = try Self.api(server)
        let refresher = Refresher()
        api.delegate = refresher
        let response: Response = try await api.request(route: .get(server.url + "/me")).value
        #expect(response.statusCode == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == "ok")
        #expect(refresher.refreshes == 1)
        #expect(server.requests.count == 2)
    }
    // MARK: A cacheable answer reset mid-body

    /// A cacheable `200` (fresh for ten minutes, with a strong `ETag`) whose stream is reset
    /// after half its body by RST_STREAM with `code` (with and without a `content-length`),
    /// then whole answers "fresh!". CachingResponses.md: the cache keeps whole answers; "never
    /// a silently wrong answer": the cut request fails typed, and the next `GET` is the
    /// server's, never the half kept and served as the whole.
    @Test(arguments: [UInt32(8), 2, 7], [true, false]) func aCacheableAnswerResetMidBodyIsNeverKept(code: UInt32, withLength: Bool) async throws {
        let counter = Counter()
        let server = try ScriptedHTTP2Server { request, connection in
            let stream = request.stream
            var fields: [(index: Int, value: String)] = [(Self.contentType, "text/plain"), (Self.cacheControl, "max-age=600"), (Self.etag, "\"e\"")]
            if withLength { fields.append((Self.contentLength, "12")) }
            connection.send(.headers, Self.endHeaders, stream, Self.block(status: "200", fields))
            if counter.next() == 1 {
                connection.send(.data, 0, stream, Data("halfha".utf8))
                usleep(200_000)
                connection.send(.reset, 0, stream, Data([UInt8(code >> 24), UInt8(code >> 16 & 0xff), UInt8(code >> 8 & 0xff), UInt8(code & 0xff)]))
            } else {
                connection.send(.data, Self.endStream, stream, Data("fresh!fresh!".utf8))
            }
        }
        let api = try Self.api(server, cache: HTTPCache())
        let url = server.url + "/cut"
        switch await Self.result({ try await api.request(route: .get(url)).value as Response }) {
        case .success(let cut): Issue.record("a stream reset mid-body (code \(code)) answered \(String(decoding: cut.body, as: UTF8.self))")
        case .failure(let error): #expect(error is APIError, "untyped: \(error)")
        }
        for _ in 0..<2 {
            let next: Response = try await api.request(route: .get(url)).value
            #expect(String(decoding: next.body, as: UTF8.self) == "fresh!fresh!")
        }
    }

    // MARK: A head past the limit

    /// A head that never ends, over HTTP/2: one `200` head sent on in CONTINUATION frames (a
    /// CONTINUATION flood), or `103 Early Hints` heads one after another, each carrying a
    /// `link`, up to 4 MiB of fields. ResponsesAndErrors.md, its table of limits: a head past
    /// the limit fails with `.transportFailed` and `URLError.badServerResponse`, "the
    /// connection is closed". Over HTTP/1.1 (the `http1` case) Tern's own limit, 256 KiB,
    /// stops it. Over HTTP/2 libcurl 7.88's own, 128 KiB, stops it first, or nghttp2's count of
    /// CONTINUATION frames, and libcurl reported it as a lost connection
    /// ("nghttp2_session_mem_recv() returned -902: The user callback function failed", or
    /// "-905: Too many CONTINUATION frames"), which a caller reads as the network's fault, not
    /// the server's.
    @Test(arguments: ["http1", "continuation", "earlyHints"]) func aHeadPastTheLimitFailsAsTheDocsSay(flood: String) async throws {
        let value = String(repeating: "l", count: 120)
        let server = try ScriptedHTTP2Server { request, connection in
            var fields = Data()
            for _ in 0..<100 { fields.append(contentsOf: [0x0f, UInt8(45 - 15), UInt8(value.utf8.count)]); fields.append(contentsOf: value.utf8) }
            let rounds = (4 << 20) / fields.count
            if flood == "continuation" {
                connection.send(.headers, 0, request.stream, Data([0x88]) + fields)
                for _ in 0..<rounds { connection.send(.continuation, 0, request.stream, fields) }
            } else {
                for _ in 0..<rounds { connection.send(.headers, Self.endHeaders, request.stream, Self.block(status: "103", []) + fields) }
            }
        }
        let http1 = try RawServer { connection in
            guard connection.readRequest() != nil, connection.send("HTTP/1.1 200 OK\r\n") else { return }
            for _ in 0..<((4 << 20) / 128) { guard connection.send("Link: \(value)\r\n") else { return } }
        }
        defer { http1.stop() }
        let api = flood == "http1" ? AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: try CurlTransport(), responseQueue: .global())
            : try Self.api(server)
        let outcome = await Self.result({ try await api.request(route: .get((flood == "http1" ? http1.baseURL : server.url) + "/head")).value as Response })
        guard case .failure(APIError.transportFailed(let failure)) = outcome else {
            Issue.record("not transportFailed: \(outcome)")
            return
        }
        let underlying = failure.underlying as? URLError
        #expect(underlying?.code == .badServerResponse, "\(flood): \(outcome)")
        let why = ["http1": "head passed 256 KiB", "continuation": "more CONTINUATION frames", "earlyHints": "head passed the 128 KiB"][flood]!
        #expect(underlying?.localizedDescription.contains(why) == true, "\(flood): \(outcome)")
    }
}
#endif
