#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting
@testable import TernTransport

/// Bodies in a `Content-Encoding`, from a raw-socket server: undone whole when they are what
/// their encoding says, and failed with a typed error when they are not (cut short, corrupt,
/// followed by other bytes, or in an encoding nobody asked for): never handed over half.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct ContentEncodingTests {
    /// A body made in an encoding, and what it says in words.
    struct Encoded: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let encoding: String
        let bytes: Data
    }

    /// What the bodies below decode to: long enough for several stored blocks.
    static let text = Data((0..<3_000).map { "line \($0) of the body\n" }.joined().utf8)
    static let gzip = GzipStream.stored(text)
    static let brotli = Compressors.brotli(text)
    static let zstd = Compressors.zstd(text)

    /// A server answering `/encoded` with `body` in `encoding` (by its length, or chunked), and
    /// anything else with its name; `requests` keeps every request's head.
    static func server(_ encoded: Encoded, chunked: Bool, status: String = "200 OK", requests: Recorder<String>? = nil) throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                requests?.append(request)
                let name = ConnectionReuseTests.name(of: request)
                guard name == "encoded" else {
                    connection.send(RawServer.Connection.response(name))
                    continue
                }
                let head = "HTTP/1.1 \(status)\r\nContent-Type: text/plain\r\nContent-Encoding: \(encoded.encoding)\r\n"
                let bytes = [UInt8](encoded.bytes)
                if chunked {
                    var answer = Array((head + "Transfer-Encoding: chunked\r\n\r\n").utf8)
                    // Chunks of 1,000 bytes: a stream cut anywhere still ends its framing whole.
                    for start in stride(from: 0, to: bytes.count, by: 1_000) {
                        let chunk = bytes[start..<min(start + 1_000, bytes.count)]
                        answer += Array((String(chunk.count, radix: 16) + "\r\n").utf8) + chunk + Array("\r\n".utf8)
                    }
                    connection.send(answer + Array("0\r\n\r\n".utf8))
                } else {
                    connection.send(Array((head + "Content-Length: \(bytes.count)\r\n\r\n").utf8) + bytes)
                }
            }
        }
    }

    func api() -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 60, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
    }

    static let undone = [
        Encoded(testDescription: "gzip", encoding: "gzip", bytes: gzip),
        Encoded(testDescription: "x-gzip", encoding: "x-gzip", bytes: gzip),
        Encoded(testDescription: "GZIP in capitals", encoding: "GZIP", bytes: gzip),
        Encoded(testDescription: "deflate in zlib's framing", encoding: "deflate", bytes: GzipStream.deflate(text)),
        Encoded(testDescription: "deflate without it", encoding: "deflate", bytes: GzipStream.deflate(text, raw: true)),
        Encoded(testDescription: "gzip twice", encoding: "gzip, gzip", bytes: GzipStream.stored(gzip)),
        Encoded(testDescription: "gzip and identity", encoding: "identity, gzip", bytes: gzip),
        Encoded(testDescription: "gzip, then deflate", encoding: "gzip, deflate", bytes: GzipStream.deflate(gzip)),
    ] + [
        brotli.map { Encoded(testDescription: "brotli", encoding: "br", bytes: $0) },
        zstd.map { Encoded(testDescription: "zstd", encoding: "zstd", bytes: $0) },
        zstd.map { Encoded(testDescription: "zstd, then gzip", encoding: "zstd, gzip", bytes: GzipStream.stored($0)) },
    ].compactMap { $0 }

    @Test(arguments: undone, [false, true])
    func aBodyInAnEncodingIsUndoneWhole(_ encoded: Encoded, chunked: Bool) async throws {
        let server = try Self.server(encoded, chunked: chunked)
        defer { server.stop() }
        let body: Data = try await api().request(route: .get(server.baseURL + "/encoded")).value
        #expect(body == Self.text)
    }

    /// libcurl (7.88 here, and in FoundationNetworking) takes a gzip stream cut short for a
    /// whole one, and hands over what it had.
    static let refused = [
        Encoded(testDescription: "gzip cut in its header", encoding: "gzip", bytes: gzip.prefix(6)),
        Encoded(testDescription: "gzip with its header alone", encoding: "gzip", bytes: gzip.prefix(10)),
        Encoded(testDescription: "gzip cut in its middle", encoding: "gzip", bytes: gzip.prefix(gzip.count / 2)),
        Encoded(testDescription: "gzip without its trailer", encoding: "gzip", bytes: gzip.dropLast(8)),
        Encoded(testDescription: "gzip without its last byte", encoding: "gzip", bytes: gzip.dropLast()),
        Encoded(testDescription: "gzip whose check fails", encoding: "gzip", bytes: gzip.dropLast(8) + Data([0, 0, 0, 0]) + gzip.suffix(4)),
        Encoded(testDescription: "gzip whose length is wrong", encoding: "gzip", bytes: gzip.dropLast(4) + Data([1, 0, 0, 0])),
        Encoded(testDescription: "gzip that is none", encoding: "gzip", bytes: text),
        Encoded(testDescription: "gzip followed by other bytes", encoding: "gzip", bytes: gzip + Data("more".utf8)),
        Encoded(testDescription: "deflate cut short", encoding: "deflate", bytes: GzipStream.deflate(text).prefix(5_000)),
        Encoded(testDescription: "gzip twice, the inner cut short", encoding: "gzip, gzip", bytes: GzipStream.stored(gzip.dropLast(8))),
        Encoded(testDescription: "an unknown encoding", encoding: "x-secret", bytes: text),
        Encoded(testDescription: "five encodings", encoding: "gzip, gzip, gzip, gzip, gzip", bytes: gzip),
    ] + [
        brotli.map { Encoded(testDescription: "brotli cut short", encoding: "br", bytes: $0.prefix($0.count / 2)) },
        brotli.map { Encoded(testDescription: "brotli followed by other bytes", encoding: "br", bytes: $0 + Data("more".utf8)) },
        Encoded(testDescription: "brotli that is none", encoding: "br", bytes: text),
        zstd.map { Encoded(testDescription: "zstd without its checksum's last byte", encoding: "zstd", bytes: $0.dropLast()) },
        zstd.map { Encoded(testDescription: "zstd whose checksum fails", encoding: "zstd", bytes: $0.dropLast(4) + Data([0, 0, 0, 0])) },
        zstd.map { Encoded(testDescription: "zstd followed by other bytes", encoding: "zstd", bytes: $0 + Data("more".utf8)) },
    ].compactMap { $0 }

    @Test(.enabled(if: TestTransport.isCurl, "FoundationNetworking's libcurl takes a gzip stream cut short for a whole one"),
          arguments: refused, [false, true])
    func aBodyThatIsNotItsEncodingFailsTypedAndTheNextIsAnswered(_ encoded: Encoded, chunked: Bool) async throws {
        let server = try Self.server(encoded, chunked: chunked)
        defer { server.stop() }
        let api = api()
        let error = await apiError(of: api.request(route: .get(server.baseURL + "/encoded")) as Promise<Data>)
        guard case .transportFailed(let failure)? = error else {
            Issue.record("expected transportFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.urlError?.code == .cannotDecodeContentData, "\(failure)")
        // The framing was whole: the connection goes on to the next request.
        let next: String = try await api.request(route: .get(server.baseURL + "/next")).value
        #expect(next == "next")
    }

    @Test(.enabled(if: TestTransport.isCurl, "FoundationNetworking's libcurl fails after the first member"))
    func gzipMembersOneAfterAnotherAreOneBody() async throws {
        let server = try Self.server(Encoded(testDescription: "", encoding: "gzip", bytes: Self.gzip + Self.gzip), chunked: false)
        defer { server.stop() }
        let body: Data = try await api().request(route: .get(server.baseURL + "/encoded")).value
        #expect(body == Self.text + Self.text)
    }

    /// A HEAD's answer, a 204 and a 304 name the encoding a body would have: none comes, and
    /// none is judged, whatever the encoding.
    @Test(arguments: [("HEAD", "200 OK"), ("GET", "204 No Content"), ("GET", "304 Not Modified")])
    func anAnswerWithoutABodyIsNeverJudgedByItsEncoding(method: String, status: String) async throws {
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let name = ConnectionReuseTests.name(of: request)
                connection.send(name == "encoded" ? "HTTP/1.1 \(status)\r\nContent-Encoding: x-secret\r\nContent-Length: 0\r\n\r\n"
                                                  : RawServer.Connection.response(name))
            }
        }
        defer { server.stop() }
        let api = api()
        let route: Route = method == "HEAD" ? .head(server.baseURL + "/encoded") : .get(server.baseURL + "/encoded")
        let response = try await (api.request(route: route, options: RequestOptions(validation: .statusCodes(200..<400))) as Promise<Response>).value
        #expect(response.statusCode == Int(status.prefix(3)))
        let next: String = try await api.request(route: .get(server.baseURL + "/next")).value
        #expect(next == "next")
    }

    /// A request's own `Accept-Encoding`, and whether it asked for `x-secret` (a coding Tern
    /// cannot undo), by name or by `*`, and not refused with `q=0`.
    static let asking = [("x-secret;q=1.0, gzip;q=0.5", true), ("*", true), ("GZIP, X-Secret", true), ("x-secret;q=0, gzip", false), ("gzip", false)]

    @Test(.enabled(if: TestTransport.isCurl, "FoundationNetworking undoes what its libcurl can"), arguments: asking)
    func anEncodingTheRequestAskedForComesAsItIs(accepting: String, asked: Bool) async throws {
        let requests = Recorder<String>()
        let server = try Self.server(Encoded(testDescription: "", encoding: "x-secret", bytes: Data("secret".utf8)), chunked: false, requests: requests)
        defer { server.stop() }
        let result = await (api().request(route: .get(server.baseURL + "/encoded"),
                                          parameters: URLParameters([:], headers: ["Accept-Encoding": accepting])) as Promise<Data>).result
        if asked {
            #expect(try result.get() == Data("secret".utf8))
        } else {
            guard case .failure(APIError.transportFailed(let failure)) = result else {
                Issue.record("expected transportFailed, got \(result)")
                return
            }
            #expect(failure.urlError?.code == .cannotDecodeContentData)
        }
        let sent = requests.items.first ?? ""
        #expect(sent.contains("\r\nAccept-Encoding: \(accepting)\r\n"), "\(sent)")
    }

    @Test(.enabled(if: TestTransport.isCurl, "FoundationNetworking's libcurl asks for what it can undo"))
    func ternAsksForWhatItCanUndo() async throws {
        let requests = Recorder<String>()
        let server = try Self.server(Encoded(testDescription: "", encoding: "gzip", bytes: Self.gzip), chunked: false, requests: requests)
        defer { server.stop() }
        let _: Data = try await api().request(route: .get(server.baseURL + "/encoded")).value
        let sent = requests.items.first ?? ""
        #expect(ContentDecoder.accepted.hasPrefix("gzip, deflate"))
        #expect(ContentDecoder.accepted.contains("br") == (Self.brotli != nil))
        #expect(sent.lowercased().contains("accept-encoding: \(ContentDecoder.accepted)\r\n"), "\(sent)")
    }

    /// A request for a range asks for the body as stored, on either transport: a range of a
    /// compressed body is a slice of its stream. One that names its encodings sends its own.
    @Test func aRangeIsAskedForAsStoredUnlessTheRequestSaysOtherwise() async throws {
        let requests = Recorder<String>()
        let server = try Self.server(Encoded(testDescription: "", encoding: "identity", bytes: Data("stored".utf8)), chunked: false, requests: requests)
        defer { server.stop() }
        for headers: HTTPHeaders in [["Range": "bytes=0-5"], ["Range": "bytes=0-5", "Accept-Encoding": "gzip"], [:]] {
            let body: Data = try await api().request(route: .get(server.baseURL + "/encoded"), parameters: URLParameters([:], headers: headers)).value
            #expect(body == Data("stored".utf8))
        }
        let asked = requests.items.map { request in
            request.split(separator: "\r\n").first { $0.lowercased().hasPrefix("accept-encoding:") }.map { String($0.dropFirst(16)).trimmingCharacters(in: .whitespaces) }
        }
        #expect(asked.count == 3)
        guard asked.count == 3 else { return }
        #expect(asked[0] == "identity" && asked[1] == "gzip", "\(asked)")
        #expect(asked[2] != nil && asked[2] != "identity", "\(asked)")
    }
}
#endif
