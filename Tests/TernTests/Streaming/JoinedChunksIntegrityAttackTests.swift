#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting
import TernTransport

/// The attacker sends its body one byte per chunk (HTTP/1.1 chunked framing, over plain TCP or
/// TLS, gzip-encoded or not, or one byte per HTTP/2 DATA frame) to a reader that stops now and
/// then, through a stream buffer of 1 KiB: the transfer pauses and resumes hundreds of times,
/// and the chunks that wait are joined into pieces while the reader takes others. The reader
/// must see every byte once, in order, and the stream end as the server ended it; a reader that
/// cancels midway must have had a prefix of the body, then ``APIError/cancelled``.
@Suite(.onTestThreads, .timeLimit(.minutes(1)))
struct JoinedChunksIntegrityAttackTests {
    static let size = 64 << 10
    static let bufferSize = 1 << 10

    /// Bytes no shift or repeat of a few leaves as they were.
    static let body: [UInt8] = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8 &+ $0 >> 13) }

    enum Path: String, CaseIterable, Sendable {
        case plain, gzip, tls, http2
    }

    /// The body, one byte per chunk of HTTP/1.1's chunked framing.
    static func chunked(_ bytes: [UInt8]) -> [UInt8] {
        var framed: [UInt8] = []
        framed.reserveCapacity(bytes.count * 6 + 5)
        for byte in bytes { framed += [UInt8(ascii: "1"), 13, 10, byte, 13, 10] }
        return framed + Array("0\r\n\r\n".utf8)
    }

    /// A server for `path` and an API that reaches it; nil when the transport under test cannot
    /// (TLS with a private CA and HTTP/2 are libcurl's on Linux).
    static func serve(_ path: Path) throws -> (url: String, api: AbstractAPI, keep: [AnyObject])? {
        let configuration = APIConfiguration(timeout: 30, retryPolicy: .never)
        switch path {
        case .plain, .gzip:
            let sent = path == .gzip ? [UInt8](GzipStream.compressed(Data(body))) : body
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n"
                + (path == .gzip ? "Content-Encoding: gzip\r\n" : "") + "\r\n"
            let server = try RawServer { connection in
                guard connection.readRequest() != nil, connection.send(head) else { return }
                _ = connection.send(chunked(sent))
            }
            guard let transport = TestTransport.make() else { return nil }
            return (server.baseURL, AbstractAPI(configuration: configuration, transport: transport, responseQueue: .global()), [server])
        case .tls:
            guard TestTransport.isCurl else { return nil }
            let certificates = try TestCertificates()
            let server = try RawServer { connection in
                guard connection.readRequest() != nil,
                      connection.send("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n") else { return }
                _ = connection.send(chunked(body))
            }
            let relay = try TLSRelay(certificates: certificates, to: server.port)
            let api = AbstractAPI(configuration: configuration, transport: try CurlTransport(trusting: certificates.authority), responseQueue: .global())
            return (relay.baseURL, api, [server, relay, certificates])
        case .http2:
            guard TestTransport.isCurl else { return nil }
            let server = try HTTP2StreamServer(plans: [1: .trickle(Data(body))])
            let api = AbstractAPI(configuration: configuration, transport: try CurlTransport(trusting: server.certificates.authority),
                                  responseQueue: .global())
            return (server.url, api, [server])
        }
    }

    /// Reads `stream`, stopping a moment every few chunks, and cancelling it once `cancelAfter`
    /// bytes have come: the bytes read, and how it ended.
    static func read(_ stream: ResponseStream, cancelAfter: Int? = nil) async -> (bytes: [UInt8], end: String) {
        var bytes: [UInt8] = []
        var chunks = 0
        do {
            for try await chunk in stream {
                bytes.append(contentsOf: chunk)
                chunks += 1
                if let cancelAfter, bytes.count >= cancelAfter { stream.cancel() }
                if chunks.isMultiple(of: 5) { try await Task.sleep(for: .milliseconds(2)) }
            }
            return (bytes, "end")
        } catch let error as APIError {
            if case .cancelled = error { return (bytes, "cancelled") }
            return (bytes, "\(error)")
        } catch {
            return (bytes, "untyped \(error)")
        }
    }

    @Test(arguments: Path.allCases)
    func everyByteComesOnceInOrder(_ path: Path) async throws {
        guard let (url, api, keep) = try Self.serve(path) else { return }
        defer { withExtendedLifetime(keep) {} }
        let stream = api.stream(route: .get(url + "/drip"), options: RequestOptions(streamBufferSize: Self.bufferSize))
        let (bytes, end) = await Self.read(stream)
        #expect(end == "end")
        #expect(bytes.count == Self.size)
        let firstWrong = zip(bytes, Self.body).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(firstWrong == nil, "first wrong byte at \(firstWrong ?? -1)")
    }

    @Test(arguments: Path.allCases)
    func aReaderCancellingMidwayHadAPrefix(_ path: Path) async throws {
        guard let (url, api, keep) = try Self.serve(path) else { return }
        defer { withExtendedLifetime(keep) {} }
        let stream = api.stream(route: .get(url + "/drip"), options: RequestOptions(streamBufferSize: Self.bufferSize))
        let (bytes, end) = await Self.read(stream, cancelAfter: Self.size / 3)
        #expect(end == "cancelled")
        #expect(bytes.count >= Self.size / 3)
        #expect(Array(Self.body.prefix(bytes.count)) == bytes)
    }

    /// Bytes in which each four-byte word is its own index: no shift, repeat or loss leaves a
    /// stretch as it was. Made and compared in bulk, since byte by byte the debug build under
    /// the thread sanitizer took most of this test's minute beside three other tests (CI, stop 102).
    static func numbered(_ count: Int) -> Data {
        (0..<UInt32(count / 4)).map(\.bigEndian).withUnsafeBytes { Data($0) }
    }

    /// Over a transport that cannot pause (URLSession on Linux), a reader away while 6 MiB come
    /// in chunks of 1 to 4,093 bytes: what waits is joined, up to the stream's ceiling (4 MiB),
    /// and the reader, back, gets every byte before the one that passed it, in order, then
    /// ``APIError/responseTooLarge(_:)``; or, if FoundationNetworking still held the rest in its
    /// own queue, every byte.
    @Test(.enabled(if: !TestTransport.pauses, "the transport holds the server back"))
    func pastTheCeilingTheReaderHasEveryByteBeforeThenTheError() async throws {
        let body = Self.numbered(6 << 20)
        let done = Recorder<Bool>()
        let server = try RawServer { connection in
            defer { done.append(true) }
            guard connection.readRequest() != nil,
                  connection.send("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n") else { return }
            var (offset, size, framed) = (0, 1, [UInt8]())
            while offset < body.count {
                let piece = body[offset..<min(body.count, offset + size)]
                framed.append(contentsOf: Array("\(String(piece.count, radix: 16))\r\n".utf8))
                framed.append(contentsOf: piece)
                framed.append(contentsOf: [13, 10])
                offset += piece.count
                size = size % 4093 + 1
                if framed.count > 64 << 10 {
                    guard connection.send(framed) else { return }
                    framed = []
                }
            }
            _ = connection.send(framed + Array("0\r\n\r\n".utf8))
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 60, retryPolicy: .never), transport: TestTransport.make(),
                              responseQueue: .global())
        let stream = api.stream(route: .get(server.baseURL + "/flood"), options: RequestOptions(streamBufferSize: Self.bufferSize))
        var (bytes, end, first) = (Data(), "end", 0)
        do {
            for try await chunk in stream {
                bytes.append(chunk)
                guard first == 0 else { continue }
                first = chunk.count
                // Away until the server has sent all it could (bounded).
                for _ in 0..<300 where done.items.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
                try await Task.sleep(for: .seconds(2))
            }
        } catch let error as APIError {
            if case .responseTooLarge = error { end = "too large" } else { end = "\(error)" }
        }
        let ceiling = max(4 * Self.bufferSize, 4 << 20)
        // FoundationNetworking may still hold much of the body in its own queue when the reader
        // comes back: then the reader keeps up, and has it all.
        #expect(end == "too large" || (end == "end" && bytes.count == body.count), "\(end)")
        // What waited while the reader was away: at most the ceiling, short of it by less than
        // the chunk that passed it.
        let waited = bytes.count - first
        if end == "too large" { #expect(waited > ceiling - 4093 && waited <= ceiling, "\(waited)") }
        #expect(bytes.count <= body.count && bytes == body.prefix(bytes.count), "not the body's first \(bytes.count) bytes")
    }
}
#endif
