#if os(Linux)
import Foundation
import FoundationNetworking
import Testing
import Tern
import TernTesting

/// An HTTP/2 server over TLS (a ``TLSRelay`` offering h2) whose script writes any frame, of
/// any type (PRIORITY and WINDOW_UPDATE too), as raw bytes: the script sees each request's
/// stream once it ended.
final class RawFrameHTTP2Server: @unchecked Sendable {
    /// Writes one frame: its type, flags, stream and payload.
    struct Writer {
        let connection: RawServer.Connection
        func frame(_ type: UInt8, _ flags: UInt8, _ stream: UInt32, _ payload: [UInt8] = []) {
            var bytes = [UInt8(payload.count >> 16 & 0xff), UInt8(payload.count >> 8 & 0xff), UInt8(payload.count & 0xff), type, flags]
            bytes += [UInt8(stream >> 24 & 0x7f), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)]
            _ = connection.send(bytes + payload)
        }

        /// A `200` head with `fields` (HPACK static indexes and values under 128 bytes), after
        /// `prefix` (raw HPACK bytes, such as a dynamic table size update).
        func head(_ stream: UInt32, prefix: [UInt8] = [], fields: [(index: Int, value: String)], endsStream: Bool = false) {
            var block = prefix + [0x88]
            for (index, value) in fields { block += [0x0f, UInt8(index - 15), UInt8(value.utf8.count)] + Array(value.utf8) }
            frame(1, 0x4 | (endsStream ? 0x1 : 0), stream, block)
        }
    }

    let certificates: TestCertificates
    private var tls: RelayedRawServer?

    init(script: @escaping @Sendable (_ stream: UInt32, Writer) -> Void) throws {
        certificates = try TestCertificates()
        tls = try RelayedRawServer(certificates: certificates) { raw in
            let writer = Writer(connection: raw)
            var buffer = [UInt8]()
            var sawPreface = false
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
            while case let count = recv(raw.socket, &chunk, chunk.count, 0), count > 0 {
                buffer += chunk[0..<count]
                if !sawPreface {
                    guard buffer.count >= preface.count else { continue }
                    guard Array(buffer.prefix(preface.count)) == preface else { return }
                    sawPreface = true
                    writer.frame(4, 0, 0)
                    buffer.removeFirst(preface.count)
                }
                while buffer.count >= 9 {
                    let length = Int(buffer[0]) << 16 | Int(buffer[1]) << 8 | Int(buffer[2])
                    guard buffer.count >= 9 + length else { break }
                    let (type, flags) = (buffer[3], buffer[4])
                    let stream = (UInt32(buffer[5]) << 24 | UInt32(buffer[6]) << 16 | UInt32(buffer[7]) << 8 | UInt32(buffer[8])) & 0x7fff_ffff
                    let payload = Array(buffer[9..<(9 + length)])
                    buffer.removeFirst(9 + length)
                    switch type {
                    case 4 where flags & 0x1 == 0: writer.frame(4, 0x1, 0)
                    case 6 where flags & 0x1 == 0: writer.frame(6, 0x1, 0, payload)
                    case 0 where flags & 0x1 != 0, 1 where flags & 0x1 != 0, 9 where flags & 0x1 != 0: script(stream, writer)
                    default: break
                    }
                }
            }
        }
    }

    var url: String { tls?.url ?? "" }
}

/// HTTP/2 over TLS (libcurl only: the API is built on a CurlTransport) during a 4 MiB answer,
/// downloaded to memory and to a file: floods of frames that ask for no answer (WINDOW_UPDATE,
/// empty DATA, PRIORITY on idle streams), 2,000 after each 16 KiB DATA frame, and frames that
/// break the protocol mid-body (an HPACK dynamic table size update past the 4,096 bytes the
/// client allows, a WINDOW_UPDATE of zero, an RST_STREAM on an idle stream, DATA on stream 0,
/// a PUSH_PROMISE the client disabled). Held to "every promise settles exactly once with a
/// typed APIError that says what went wrong" and to ResponsesAndErrors.md's word for HTTP/2 the
/// server broke (`.transportFailed` with `URLError.badServerResponse`, as CURLE_HTTP2 and
/// CURLE_HTTP2_STREAM are mapped, and as Tern says itself "where libcurl's words would
/// mislead"): the body arrives whole and right, or the request fails as the server's fault,
/// never as the network's (`networkConnectionLost`, which a caller reads as "try again").
/// The floods hold (the body arrives whole, to memory and to a file), and so does the table
/// size update (it comes in the head, and fails as `badServerResponse`). The other breaches
/// fail: nghttp2 ends the session (GOAWAY PROTOCOL_ERROR or FLOW_CONTROL_ERROR) and libcurl
/// reports the cut body as CURLE_PARTIAL_FILE, "transfer closed with 4128869 bytes remaining
/// to read", which Tern passes on as `URLError.networkConnectionLost`: the server broke HTTP/2,
/// and the caller is told the network dropped (as a SETTINGS flood was, before
/// `CurlFailure.flooded`). The same breaches before the head fail as `badServerResponse`,
/// as they should: only a breach after the head is misread.
///
/// Not under the thread sanitizer: 4 MiB over HTTP/2 with thousands of frames after each DATA
/// frame ran past the minute there, each case several minutes; the same tests run unsanitized
/// on both transports.
@Suite(.onTestThreads, .timeLimit(.minutes(1)), .enabled(if: !isThreadSanitized, "thousands of frames a megabyte, sanitized, pass the time limit"))
struct HTTP2ControlFloodAttackTests {
    static let size = 4 << 20

    static func body() -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 13) }
    }

    enum Flood: String, CaseIterable, Sendable {
        case windowUpdate, emptyData, priority
    }

    static func floodServer(_ flood: Flood, body: [UInt8]) throws -> RawFrameHTTP2Server {
        try RawFrameHTTP2Server { stream, writer in
            writer.head(stream, fields: [(31, "application/octet-stream"), (28, String(body.count))])
            var offset = 0
            var idle: UInt32 = 1_001
            while offset < body.count {
                let end = min(offset + 16_384, body.count)
                writer.frame(0, end == body.count ? 0x1 : 0, stream, Array(body[offset..<end]))
                offset = end
                guard end < body.count else { break }
                for _ in 0..<2_000 {
                    switch flood {
                    case .windowUpdate: writer.frame(8, 0, 0, [0, 0, 0, 1])
                    case .emptyData: writer.frame(0, 0, stream, [])
                    case .priority:
                        writer.frame(2, 0, idle, [0, 0, 0, 0, 15])
                        idle += 2
                    }
                }
            }
        }
    }

    static func api(_ server: RawFrameHTTP2Server) throws -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 40, retryPolicy: .never),
                    transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
    }

    /// What a failure says, or `nil` when it is the server's fault as a `badServerResponse`.
    static func wrongFailure(_ error: any Error) -> String? {
        if case APIError.transportFailed(let failure) = error, (failure.underlying as? URLError)?.code == .badServerResponse { return nil }
        return "\(error)"
    }

    @Test(arguments: Flood.allCases) func aFloodDuringADownloadToMemory(flood: Flood) async throws {
        let body = Self.body()
        let server = try Self.floodServer(flood, body: body)
        let result = await (try Self.api(server).request(route: .get(server.url + "/big")) as Promise<Response>).result
        switch result {
        case .success(let response): #expect(response.body == Data(body), "\(flood): a wrong body of \(response.body.count) bytes")
        case .failure(let error): #expect(Self.wrongFailure(error) == nil, "\(flood): \(error)")
        }
    }

    @Test(arguments: Flood.allCases) func aFloodDuringADownloadToAFile(flood: Flood) async throws {
        let body = Self.body()
        let server = try Self.floodServer(flood, body: body)
        let directory = URL(fileURLWithPath: "/tmp/attack95a-flood-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let destination = directory.appendingPathComponent("big.bin")
        let result = await (try Self.api(server).download(route: .get(server.url + "/big"), to: destination)).result
        switch result {
        case .success: #expect(try Data(contentsOf: destination) == Data(body), "\(flood): a wrong file")
        case .failure(let error): #expect(Self.wrongFailure(error) == nil, "\(flood): \(error)")
        }
    }

    enum Breach: String, CaseIterable, Sendable {
        case tableSizeOverTheLimit, windowUpdateOfZero, resetOfAnIdleStream, dataOnStreamZero, unaskedPush, windowOverflow
    }

    /// A head, 64 KiB of the body, then `breach`: the request fails as the server's fault.
    @Test(arguments: Breach.allCases) func aBreachOfTheProtocolMidBodyIsTheServers(breach: Breach) async throws {
        try await Self.breach(breach, beforeTheHead: false)
    }

    /// The same breaches before the head: the request fails as the server's fault.
    @Test(arguments: Breach.allCases.filter { $0 != .tableSizeOverTheLimit }) func aBreachOfTheProtocolBeforeTheHeadIsTheServers(breach: Breach) async throws {
        try await Self.breach(breach, beforeTheHead: true)
    }

    static func breach(_ breach: Breach, beforeTheHead: Bool) async throws {
        let body = Self.body()
        let server = try RawFrameHTTP2Server { stream, writer in
            let prefix: [UInt8] = breach == .tableSizeOverTheLimit ? [0x3f, 0xe1, 0xff, 0xff, 0x0f] : []
            if !beforeTheHead {
                writer.head(stream, prefix: prefix, fields: [(31, "application/octet-stream"), (28, String(body.count))])
                for offset in stride(from: 0, to: 65_536, by: 16_384) { writer.frame(0, 0, stream, Array(body[offset..<(offset + 16_384)])) }
            }
            switch breach {
            case .tableSizeOverTheLimit: break
            case .windowUpdateOfZero: writer.frame(8, 0, 0, [0, 0, 0, 0])
            case .resetOfAnIdleStream: writer.frame(3, 0, stream + 100, [0, 0, 0, 8])
            case .dataOnStreamZero: writer.frame(0, 0, 0, [1, 2, 3])
            case .unaskedPush: writer.frame(5, 0x4, stream, [0, 0, 0, 2, 0x82, 0x86, 0x84, 0x41, 0x03] + Array("a.b".utf8))
            case .windowOverflow: writer.frame(8, 0, 0, [0x7f, 0xff, 0xff, 0xff])
            }
            // The rest of the body comes after, as if nothing had happened.
            if beforeTheHead {
                writer.head(stream, prefix: prefix, fields: [(31, "application/octet-stream"), (28, String(body.count))])
                for offset in stride(from: 0, to: 65_536, by: 16_384) { writer.frame(0, 0, stream, Array(body[offset..<(offset + 16_384)])) }
            }
            for offset in stride(from: 65_536, to: body.count, by: 16_384) {
                writer.frame(0, offset + 16_384 == body.count ? 0x1 : 0, stream, Array(body[offset..<(offset + 16_384)]))
            }
        }
        let result = await (try Self.api(server).request(route: .get(server.url + "/big")) as Promise<Response>).result
        switch result {
        case .success(let response): Issue.record("\(breach): answered with \(response.body.count) bytes, \(response.body == Data(body) ? "right" : "wrong")")
        case .failure(let error) where !beforeTheHead && breach != .tableSizeOverTheLimit:
            // nghttp2 answers the breach with a GOAWAY, and libcurl 7.88 reports the body cut short
            // (CURLE_PARTIAL_FILE, "transfer closed with N bytes remaining to read"), in the words
            // and code of a connection the network lost: nothing in what it tells Tern sets the two
            // apart. The request fails typed, once; only who is to blame is wrong.
            withKnownIssue("libcurl 7.88 reports nghttp2's refusal of a breach mid-body as a connection lost") {
                #expect(Self.wrongFailure(error) == nil, "\(breach): \(error)")
            }
        case .failure(let error): #expect(Self.wrongFailure(error) == nil, "\(breach): \(error)")
        }
    }
}
#endif
