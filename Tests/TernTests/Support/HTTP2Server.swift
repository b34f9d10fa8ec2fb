#if os(Linux)
import Foundation

/// HTTP/2 over TLS, just enough of it to answer requests: `openssl s_server -alpn h2` accepts the
/// connection and does TLS, one connection at a time, and hands the decrypted bytes to this
/// process, which reads the frames (RFC 9113) and answers every request stream with `body`.
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
    }

    let certificates: TestCertificates
    let port: Int
    private let process: Process
    private let toServer = Pipe()
    private let fromServer = Pipe()
    private let body: Data
    /// By request number, from 1: the requests not answered.
    private let misbehaviors: [Int: Misbehavior]
    private let lock = NSLock()
    private var seenConnections = 0
    private var seenRequests: [Request] = []
    private var seenResets: [UInt32] = []
    /// Request bodies so far, by stream, until the stream ends.
    private var bodies: [UInt32: Data] = [:]

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
        port = try TestCertificates.freePort()
        process = try certificates.server(on: port, ["-alpn", "h2"], input: toServer, output: fromServer)
        // Holds the server only while it handles bytes: waiting for them, it lets the server go,
        // whose end stops s_server, whose end ends the wait.
        let input = fromServer.fileHandleForReading
        Thread { [weak self] in
            var buffer = Data()
            while true {
                let chunk = input.availableData
                guard !chunk.isEmpty, let self else { return }   // s_server or the server has gone
                buffer.append(chunk)
                while let consumed = self.handleNext(in: buffer) { buffer.removeFirst(consumed) }
            }
        }.start()
    }

    deinit {
        stopServer(process)
    }

    var url: String { "https://127.0.0.1:\(port)" }

    /// Waits until s_server accepts connections: a connection that sends nothing and closes is
    /// no HTTP/2 connection, and is not counted.
    func waitUntilListening() async throws {
        for _ in 0..<200 {
            if TestCertificates.accepts(port) { return }
            try await Task.sleep(nanoseconds: 25_000_000)
        }
        throw TestError()
    }
    var connections: Int { lock.withLock { seenConnections } }
    var requests: [Request] { lock.withLock { seenRequests } }
    /// The streams the client reset.
    var resets: [UInt32] { lock.withLock { seenResets } }

    // MARK: Frames

    private enum Kind: UInt8 {
        case data = 0, headers = 1, reset = 3, settings = 4, ping = 6, continuation = 9
    }

    private static let preface = Data("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    private static let endStream: UInt8 = 0x1
    private static let endHeaders: UInt8 = 0x4
    private static let ack: UInt8 = 0x1

    /// Handles the preface or frame at the start of `buffer`; returns its length, or `nil` until
    /// it has all arrived.
    private func handleNext(in buffer: Data) -> Int? {
        let bytes = [UInt8](buffer.prefix(Self.preface.count))
        if bytes.first == UInt8(ascii: "P") {
            guard buffer.count >= Self.preface.count else { return nil }
            // A new connection: its settings first, empty (the defaults).
            lock.withLock { seenConnections += 1; bodies = [:] }
            send(.settings, flags: 0, stream: 0)
            return Self.preface.count
        }
        guard buffer.count >= 9 else { return nil }
        let header = [UInt8](buffer.prefix(9))
        let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
        guard buffer.count >= 9 + length else { return nil }
        let flags = header[4]
        let stream = (UInt32(header[5]) << 24 | UInt32(header[6]) << 16 | UInt32(header[7]) << 8 | UInt32(header[8])) & 0x7fff_ffff
        let start = buffer.startIndex + 9
        let payload = buffer[start..<(start + length)]
        switch Kind(rawValue: header[3]) {
        case .settings where flags & Self.ack == 0:
            send(.settings, flags: Self.ack, stream: 0)
        case .ping where flags & Self.ack == 0:
            send(.ping, flags: Self.ack, stream: 0, payload: Data(payload))
        case .headers, .continuation:
            lock.withLock { bodies[stream] = bodies[stream] ?? Data() }
            if flags & Self.endStream != 0 { answer(stream) }
        case .data:
            lock.withLock { bodies[stream, default: Data()].append(payload) }
            if flags & Self.endStream != 0 { answer(stream) }
        case .reset:
            lock.withLock { seenResets.append(stream) }
        default:
            break   // window updates, priorities, resets, goaway: nothing to answer
        }
        return 9 + length
    }

    private func answer(_ stream: UInt32) {
        let number = lock.withLock {
            seenRequests.append(Request(stream: stream, body: bodies.removeValue(forKey: stream) ?? Data()))
            return seenRequests.count
        }
        switch misbehaviors[number] {
        case .reset?:
            return send(.reset, flags: 0, stream: stream, payload: Data([0, 0, 0, 2]))
        case .silence?:
            return
        case nil:
            break
        }
        // HPACK: ":status: 200" from the static table (index 8), then content-type (31) and
        // content-length (28) as literals without indexing, their names from the table.
        var block = Data([0x88])
        for (index, value) in [(31, "application/json"), (28, String(body.count))] {
            block.append(contentsOf: [0x0f, UInt8(index - 15), UInt8(value.utf8.count)])
            block.append(contentsOf: value.utf8)
        }
        send(.headers, flags: Self.endHeaders, stream: stream, payload: block)
        send(.data, flags: Self.endStream, stream: stream, payload: body)
    }

    private func send(_ kind: Kind, flags: UInt8, stream: UInt32, payload: Data = Data()) {
        var frame = Data([UInt8(payload.count >> 16 & 0xff), UInt8(payload.count >> 8 & 0xff), UInt8(payload.count & 0xff), kind.rawValue, flags])
        frame.append(contentsOf: [UInt8(stream >> 24 & 0x7f), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)])
        frame.append(payload)
        toServer.fileHandleForWriting.write(frame)
    }
}
#endif
