#if os(Linux)
import Foundation

/// HTTP/2 over TLS, just enough of it to answer requests: a ``TLSRelay`` offering `h2` does
/// TLS and hands each connection's decrypted bytes to a raw server of this process, which reads
/// the frames (RFC 9113) and answers every request stream with `body`.
///
/// It records what it saw: how many connections began (each with the client's preface), and
/// each request's stream and body. It decodes no request headers (HPACK): a request is a stream
/// whose HEADERS, and DATA if any, have ended.
final class HTTP2Server: @unchecked Sendable {
    struct Request: Equatable {
        let stream: UInt32
        let body: Data
    }

    /// What a request gets instead of the answer.
    enum Misbehavior {
        /// Its stream is reset (RST_STREAM, INTERNAL_ERROR).
        case reset
        /// Nothing, ever.
        case silence
        /// A `200` with these fields, each named by its index in HPACK's static table (such as
        /// 28, `content-length`, and 26, `content-encoding`), and this body in one DATA frame.
        case answer(fields: [(index: Int, value: String)], body: Data)
        /// The answer, then, once the client has had it, `late` on the idle connection: in turn
        /// each frame's type, flags, stream (`nil`: the answered one) and payload.
        case answerThenLate([(type: Kind, flags: UInt8, stream: UInt32?, payload: Data)])
        /// A `304` with these fields (as `answer`'s), its HEADERS ending the stream: no body.
        case notModified(fields: [(index: Int, value: String)])
        /// A GOAWAY (no error) whose last stream is the one before: the server is going away, and
        /// did not take this one, which crossed the GOAWAY on the wire.
        case goAway
    }

    let certificates: TestCertificates
    private var tls: RelayedRawServer?
    private let body: Data
    /// By request number, from 1: the requests not answered.
    private let misbehaviors: [Int: Misbehavior]
    private let lock = NSLock()
    private var seenConnections = 0
    private var seenRequests: [Request] = []
    private var seenResets: [UInt32] = []
    private var sentLate = 0

    /// - Parameters:
    ///   - body: What every request gets; one frame's worth (16 KiB) at most, so that neither
    ///     frame sizes nor flow control come into it.
    ///   - misbehaviors: The requests, numbered from 1 in the order they end, that get something
    ///     else than the answer.
    init(answering body: Data, misbehaving misbehaviors: [Int: Misbehavior] = [:]) throws {
        precondition(body.count <= 16_384)
        self.body = body
        self.misbehaviors = misbehaviors
        certificates = try TestCertificates()
        tls = try RelayedRawServer(certificates: certificates) { [weak self] connection in
            var frames = Frames(connection: connection)
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while case let count = recv(connection.socket, &chunk, chunk.count, 0), count > 0, let self {
                frames.buffer.append(contentsOf: chunk[0..<count])
                while let consumed = self.handleNext(&frames) { frames.buffer.removeFirst(consumed) }
            }
        }
    }

    var url: String { tls?.url ?? "" }

    var connections: Int { lock.withLock { seenConnections } }
    var requests: [Request] { lock.withLock { seenRequests } }
    /// The streams the client reset.
    var resets: [UInt32] { lock.withLock { seenResets } }
    /// How many answers have had their late frames sent after them.
    var lateSent: Int { lock.withLock { sentLate } }

    // MARK: Frames

    /// A frame's type.
    enum Kind: UInt8 {
        case data = 0, headers = 1, reset = 3, settings = 4, ping = 6, goAway = 7, continuation = 9
    }

    private static let preface = Data("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    private static let endStream: UInt8 = 0x1
    private static let endHeaders: UInt8 = 0x4
    private static let ack: UInt8 = 0x1

    /// A connection's bytes not yet handled, and its request bodies so far, by stream, until
    /// the stream ends.
    private struct Frames {
        let connection: RawServer.Connection
        var buffer = Data()
        var bodies: [UInt32: Data] = [:]
        var sawPreface = false
    }

    /// Handles the preface or frame at the start of `frames`' buffer; returns its length, or
    /// `nil` until it has all arrived.
    private func handleNext(_ frames: inout Frames) -> Int? {
        let buffer = frames.buffer
        let send = { [connection = frames.connection] (kind: Kind, flags: UInt8, stream: UInt32, payload: Data) in
            Self.send(kind, flags: flags, stream: stream, payload: payload, on: connection)
        }
        if !frames.sawPreface {
            guard buffer.count >= Self.preface.count else { return nil }
            guard buffer.prefix(Self.preface.count) == Self.preface else { return nil }
            // A new connection: its settings first, empty (the defaults).
            frames.sawPreface = true
            lock.withLock { seenConnections += 1 }
            send(.settings, 0, 0, Data())
            return Self.preface.count
        }
        guard let frame = HTTP2FrameHeader(at: buffer) else { return nil }
        let (flags, stream, length) = (frame.flags, frame.stream, frame.length)
        let payload = frame.payload(in: buffer)
        switch Kind(rawValue: frame.kind) {
        case .settings where flags & Self.ack == 0:
            send(.settings, Self.ack, 0, Data())
        case .ping where flags & Self.ack == 0:
            send(.ping, Self.ack, 0, Data(payload))
        case .headers, .continuation:
            frames.bodies[stream] = frames.bodies[stream] ?? Data()
            if flags & Self.endStream != 0 { answer(stream, body: frames.bodies.removeValue(forKey: stream) ?? Data(), send: send) }
        case .data:
            frames.bodies[stream, default: Data()].append(payload)
            if flags & Self.endStream != 0 { answer(stream, body: frames.bodies.removeValue(forKey: stream) ?? Data(), send: send) }
        case .reset:
            lock.withLock { seenResets.append(stream) }
        default:
            break   // window updates, priorities, resets, goaway: nothing to answer
        }
        return 9 + length
    }

    private func answer(_ stream: UInt32, body requestBody: Data, send: (Kind, UInt8, UInt32, Data) -> Void) {
        let number = lock.withLock {
            seenRequests.append(Request(stream: stream, body: requestBody))
            return seenRequests.count
        }
        switch misbehaviors[number] {
        case .reset?:
            return send(.reset, 0, stream, Data([0, 0, 0, 2]))
        case .silence?:
            return
        case .answer(let fields, let body)?:
            send(.headers, Self.endHeaders, stream, Self.headerBlock(fields))
            return send(.data, Self.endStream, stream, body)
        case .notModified(let fields)?:
            return send(.headers, Self.endHeaders | Self.endStream, stream, Self.headerBlock(fields, status: 0x8b))
        case .answerThenLate(let late)?:
            send(.headers, Self.endHeaders, stream, Self.headerBlock([(31, "application/json"), (28, String(body.count))]))
            send(.data, Self.endStream, stream, body)
            // The client has had its answer: then the frames, on a connection it holds idle.
            usleep(50_000)
            for frame in late { send(frame.type, frame.flags, frame.stream ?? stream, frame.payload) }
            lock.withLock { sentLate += 1 }
            return
        case .goAway?:
            let last = stream > 2 ? stream - 2 : 0
            return send(.goAway, 0, 0, Data([UInt8(last >> 24), UInt8(last >> 16 & 0xff), UInt8(last >> 8 & 0xff), UInt8(last & 0xff), 0, 0, 0, 0]))
        case nil:
            break
        }
        send(.headers, Self.endHeaders, stream, Self.headerBlock([(31, "application/json"), (28, String(body.count))]))
        send(.data, Self.endStream, stream, body)
    }

    /// HPACK: ":status: 200" from the static table (index 8; `status` 0x8b for index 11,
    /// ":status: 304"), then `fields` as literals without indexing, their names from the table
    /// (indexes 15 to 61, values under 128 bytes).
    private static func headerBlock(_ fields: [(index: Int, value: String)], status: UInt8 = 0x88) -> Data {
        var block = Data([status])
        for (index, value) in fields {
            block.append(contentsOf: [0x0f, UInt8(index - 15), UInt8(value.utf8.count)])
            block.append(contentsOf: value.utf8)
        }
        return block
    }

    private static func send(_ kind: Kind, flags: UInt8, stream: UInt32, payload: Data, on connection: RawServer.Connection) {
        var frame = [UInt8(payload.count >> 16 & 0xff), UInt8(payload.count >> 8 & 0xff), UInt8(payload.count & 0xff), kind.rawValue, flags]
        frame.append(contentsOf: [UInt8(stream >> 24 & 0x7f), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)])
        frame.append(contentsOf: payload)
        _ = connection.send(frame)
    }
}
#endif

/// The header of the HTTP/2 frame at the start of a buffer (RFC 9113 §4.1), once the whole frame
/// has been read.
struct HTTP2FrameHeader {
    let length: Int
    let kind: UInt8
    let flags: UInt8
    let stream: UInt32

    /// `nil` until `buffer` holds the whole frame.
    init?(at buffer: Data) {
        guard buffer.count >= 9 else { return nil }
        let header = [UInt8](buffer.prefix(9))
        length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
        guard buffer.count >= 9 + length else { return nil }
        (kind, flags) = (header[3], header[4])
        stream = (UInt32(header[5]) << 24 | UInt32(header[6]) << 16 | UInt32(header[7]) << 8 | UInt32(header[8])) & 0x7fff_ffff
    }

    /// The frame's payload, after its header.
    func payload(in buffer: Data) -> Data {
        let start = buffer.startIndex + 9
        return buffer[start..<(start + length)]
    }
}
