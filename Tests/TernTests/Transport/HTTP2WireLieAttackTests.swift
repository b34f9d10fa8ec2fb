#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// HTTP/2 answers over libcurl that lie in their frames, crossed with the features that read
/// fields and bodies: a `content-length` the DATA frames do not keep (RFC 9113 §8.1.1 calls
/// that malformed), trailers carrying `set-cookie`, `cache-control` or `content-type`, several
/// `103` heads carrying cookies before the answer or an event stream, a compressed body that
/// inflates a thousandfold, and heads RFC 9113 calls malformed. Each settles once, typed; no
/// trailer or interim field is obeyed; a bomb is never kept.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct HTTP2WireLieAttackTests {
    static func api(_ server: ScriptedHTTP2Server, maximumResponseSize: SizeLimit = .megabytes(64), cache: HTTPCache? = nil) throws -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 60, maximumResponseSize: maximumResponseSize, retryPolicy: .never, cache: cache),
                    transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
    }

    /// A header block of `fields` (HPACK static indexes, literals without indexing, values
    /// under 128 bytes), after `status` when there is one: `:status` by its index (8, 200) or as
    /// a literal on that name (such as 103).
    static func block(status: String?, _ fields: [(index: Int, value: String)]) -> Data {
        var block = Data()
        switch status {
        case "200"?: block.append(0x88)
        case let status?: block.append(contentsOf: [0x08, UInt8(status.utf8.count)] + Array(status.utf8))
        case nil: break
        }
        for (index, value) in fields {
            block.append(contentsOf: [0x0f, UInt8(index - 15), UInt8(value.utf8.count)])
            block.append(contentsOf: value.utf8)
        }
        return block
    }

    static let endStream: UInt8 = 0x1
    static let endHeaders: UInt8 = 0x4
    // HPACK's static table.
    static let cacheControl = 24, contentEncoding = 26, contentLength = 28, contentType = 31, link = 45, setCookie = 55

    /// Answers `/next` with "next", anything else with `answer`.
    static func server(_ answer: @escaping @Sendable (UInt32, ScriptedHTTP2Server.Connection) -> Void) throws -> ScriptedHTTP2Server {
        try ScriptedHTTP2Server { request, connection in
            answer(request.stream, connection)
        }
    }

    /// A body longer, or shorter, than the `content-length` its head gave, ended with the
    /// stream: the request fails typed, never with the body cut to the length or past it;
    /// the next request is answered.
    @Test(arguments: [("5", "hello world"), ("20", "hello"), ("0", "hello")])
    func aBodyThatDoesNotKeepItsLengthFailsTyped(length: String, body: String) async throws {
        let server = try Self.server { stream, connection in
            if stream == 1 {
                connection.send(.headers, Self.endHeaders, stream, Self.block(status: "200", [(Self.contentType, "text/plain"), (Self.contentLength, length)]))
                connection.send(.data, Self.endStream, stream, Data(body.utf8))
            } else {
                connection.headers(stream, endsStream: false, fields: [(Self.contentType, "text/plain"), (Self.contentLength, "4")])
                connection.send(.data, Self.endStream, stream, Data("next".utf8))
            }
        }
        let api = try Self.api(server)
        let result = await (api.request(route: .get(server.url + "/lying")) as Promise<String>).result
        guard case .failure(APIError.transportFailed) = result else {
            Issue.record("expected transportFailed, got \(result)")
            return
        }
        let next: String = try await api.request(route: .get(server.url + "/next")).value
        #expect(next == "next")
    }

    /// Trailers (a HEADERS frame after the body, ending the stream) naming a cookie, a
    /// freshness and a content type: the body is the answer, its fields are the head's alone, the
    /// jar stays empty and the cache, told `no-store` by the head, keeps nothing.
    @Test func trailersAreNotObeyed() async throws {
        let server = try Self.server { stream, connection in
            connection.send(.headers, Self.endHeaders, stream, Self.block(status: "200", [(Self.contentType, "text/plain"), (Self.cacheControl, "no-store")]))
            connection.send(.data, 0, stream, Data("hello".utf8))
            connection.send(.headers, Self.endHeaders | Self.endStream, stream,
                            Self.block(status: nil, [(Self.setCookie, "planted=1; Path=/"), (Self.cacheControl, "max-age=600"), (Self.contentType, "application/json")]))
        }
        let api = try Self.api(server, cache: HTTPCache())
        for _ in 0..<2 {
            let response: Response = try await api.request(route: .get(server.url + "/trailed")).value
            #expect(String(decoding: response.body, as: UTF8.self) == "hello")
            #expect(response.headers["Content-Type"] == "text/plain" && response.headers["Cache-Control"] == "no-store", "\(response.headers)")
            #expect(response.headers["Set-Cookie"] == nil, "\(response.headers)")
        }
        #expect(server.requests.count == 2)
        #expect(api.cookieJar?.all.isEmpty == true, "\(api.cookieJar?.all ?? [])")
    }

    /// Two `103 Early Hints` carrying `set-cookie` and `link` before the answer, and before an
    /// event stream: the final head is the answer, its cookie kept and theirs not.
    @Test(arguments: [false, true])
    func earlyHintsCarryNoCookie(eventStream: Bool) async throws {
        let server = try Self.server { stream, connection in
            for index in 1...2 {
                connection.send(.headers, Self.endHeaders, stream,
                                Self.block(status: "103", [(Self.link, "</style\(index).css>; rel=preload"), (Self.setCookie, "early\(index)=1; Path=/")]))
            }
            let body = eventStream ? "data: one\n\n" : "hello"
            connection.send(.headers, Self.endHeaders, stream, Self.block(status: "200", [
                (Self.contentType, eventStream ? "text/event-stream" : "text/plain"), (Self.contentLength, String(body.utf8.count)),
                (Self.setCookie, "final=1; Path=/"),
            ]))
            connection.send(.data, Self.endStream, stream, Data(body.utf8))
        }
        let api = try Self.api(server)
        if eventStream {
            var events: [String] = []
            for try await event in api.stream(route: .get(server.url + "/events")).events { events.append(event.data) }
            #expect(events == ["one"])
        } else {
            let response: Response = try await api.request(route: .get(server.url + "/hinted")).value
            #expect(response.statusCode == 200 && String(decoding: response.body, as: UTF8.self) == "hello")
            #expect(response.headers["Link"] == nil, "\(response.headers)")
        }
        #expect(api.cookieJar?.all.map(\.name) == ["final"], "\(api.cookieJar?.all ?? [])")
    }

    /// A gzip bomb in one DATA frame (13 KB, 2 MiB undone): over a 1 MiB limit it fails as too
    /// large; under none, it arrives whole and a cache whose limit for one answer is 1 MiB
    /// keeps none of it.
    @Test func aBombInADataFrameIsHeldToTheLimitAndNotKept() async throws {
        let size = 2 << 20
        let bomb = WireBomb.gzip(repeating: 0x62, count: size)
        #expect(bomb.count <= 16_384)
        let server = try Self.server { stream, connection in
            connection.send(.headers, Self.endHeaders, stream, Self.block(status: "200", [
                (Self.contentType, "text/plain"), (Self.contentEncoding, "gzip"), (Self.cacheControl, "max-age=600"),
                (Self.contentLength, String(bomb.count)),
            ]))
            connection.send(.data, Self.endStream, stream, bomb)
        }
        let limited = try Self.api(server, maximumResponseSize: .megabytes(1))
        let failure = await tooLarge(limited.request(route: .get(server.url + "/bomb")) as Promise<Data>)
        #expect(failure?.limit == 1 << 20)
        let api = try Self.api(server, maximumResponseSize: .unlimited, cache: HTTPCache(maximumBytes: 8 << 20, maximumResponseBytes: 1 << 20))
        for _ in 0..<2 {
            let body: Data = try await api.request(route: .get(server.url + "/bomb")).value
            #expect(body.count == size && body.allSatisfy { $0 == 0x62 })
        }
        #expect(server.requests.count == 3)
    }

    /// A literal field with a new name, without indexing: any name or value, as a hostile
    /// server's encoder writes it (values under 128 bytes).
    static func literal(_ name: String, _ value: String) -> [UInt8] {
        [0x00, UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(value.utf8.count)] + Array(value.utf8)
    }

    /// Heads RFC 9113 §8.2 and §8.3 call malformed: fields of HTTP/1's connection (a transfer
    /// coding that would frame the body in chunks, `connection`, `upgrade`, `keep-alive`),
    /// lengths that are not one, a `:status` that is none or twice or after a field, names in
    /// capitals or with a space or a colon, NUL or CRLF in a value (a second `set-cookie`
    /// smuggled in), a `103` with a length. Each fails typed, nothing of it kept, and the
    /// next request on the connection is answered.
    static let malformed: [(String, [UInt8], String)] = [
        ("chunked", [0x88] + literal("transfer-encoding", "chunked"), "5\r\nhello\r\n0\r\n\r\n"),
        ("chunked, huge", [0x88] + literal("transfer-encoding", "chunked"), "FFFFFFFFFF\r\nhello\r\n0\r\n\r\n"),
        ("gzip transfer coding", [0x88] + literal("transfer-encoding", "gzip"), "hello"),
        ("connection", [0x88] + literal("connection", "close"), "hello"),
        ("upgrade", [0x88] + literal("upgrade", "h2c"), "hello"),
        ("keep-alive", [0x88] + literal("keep-alive", "timeout=5"), "hello"),
        ("length 5, 5", [0x88] + literal("content-length", "5, 5"), "hello"),
        ("length -1", [0x88] + literal("content-length", "-1"), "hello"),
        ("two lengths", [0x88] + literal("content-length", "5") + literal("content-length", "30"), "hello"),
        ("status 101", literal(":status", "101"), "hello"),
        ("status 2000", literal(":status", "2000"), "hello"),
        ("two statuses", [0x88, 0x88], "hello"),
        ("status after a field", literal("x-a", "1") + [0x88], "hello"),
        ("a name in capitals", [0x88] + literal("Content-Type", "text/plain"), "hello"),
        ("a name with a space", [0x88] + literal("x a", "1"), "hello"),
        ("a name with a colon", [0x88] + literal("set-cookie:x", "1"), "hello"),
        ("NUL in a cookie", [0x88] + literal("set-cookie", "a=1\0; Path=/"), "hello"),
        ("CRLF in a value", [0x88] + literal("x-a", "a\r\nset-cookie: injected=1; Path=/"), "hello"),
        ("a 103 with a length", literal(":status", "103") + literal("content-length", "3"), "hello"),
    ]

    @Test(arguments: malformed.indices)
    func aMalformedHeadFailsTyped(index: Int) async throws {
        let (_, block, body) = Self.malformed[index]
        let server = try ScriptedHTTP2Server { request, connection in
            guard request.stream == 1 else { return connection.answer(request.stream) }
            connection.send(.headers, Self.endHeaders, request.stream, Data(block))
            if block.starts(with: Self.literal(":status", "103")) { connection.send(.headers, Self.endHeaders, request.stream, Data([0x88])) }
            connection.send(.data, Self.endStream, request.stream, Data(body.utf8))
        }
        let api = try Self.api(server)
        let result = await (api.request(route: .get(server.url + "/malformed"), options: RequestOptions(validation: .acceptAll)) as Promise<Data>).result
        guard case .failure(APIError.transportFailed) = result else {
            Issue.record("expected transportFailed, got \(result)")
            return
        }
        #expect(api.cookieJar?.all.isEmpty == true, "\(api.cookieJar?.all ?? [])")
        let next: [[String: String]] = try await api.request(route: .get(server.url + "/next")).value
        #expect(next == [["name": "c1s3"]])
    }
}
#endif
