#if os(Linux)
import Foundation
import Glibc

/// HTTP/2 over TLS (a ``TLSRelay`` offering `h2`) that keeps to the client's flow control: it
/// tracks the client's initial window (SETTINGS) and each WINDOW_UPDATE, and sends DATA only
/// within the connection's and the stream's windows. A request planned as a flood gets an
/// endless event stream, sent as fast as those windows let it: what the server has sent is then
/// what the client let in. It decodes no request headers (HPACK): requests are numbered from 1
/// in the order their headers end, and each gets its plan, or a one-line JSON answer.
final class HTTP2StreamServer: @unchecked Sendable {
    enum Plan {
        /// `text/event-stream`, endless: events of 1 KiB (`id: n` from 1, then `data:` padding).
        case flood
        /// As `flood`, but no more than this many bytes of events; the stream stays open.
        case floodOf(Int)
        /// `text/event-stream` with this body; the stream ends with it if `ends`, else it stays open.
        case events(String, ends: Bool)
        /// Nothing, ever.
        case silence
        /// `application/octet-stream` with this body, one byte per DATA frame within the
        /// windows, then the stream's end.
        case trickle(Data)
    }

    /// What every request without a plan gets: one line of JSON, then the stream's end.
    static let answer = Data(#"{"name":"sibling"}"#.utf8 + [0x0a])

    struct Request: Equatable {
        let connection: Int
        let stream: UInt32
    }

    /// One connection's socket and flow-control windows.
    private final class Connection: @unchecked Sendable {
        let socket: Int32
        let condition = NSCondition()
        var window = 65_535
        var initialStreamWindow = 65_535
        var streamWindows: [UInt32: Int] = [:]
        var closedStreams: Set<UInt32> = []
        var isClosed = false
        let sendLock = NSLock()

        init(socket: Int32) { self.socket = socket }
    }

    let certificates: TestCertificates
    private var server: RawServer?
    private var relay: TLSRelay?
    private let plans: [Int: Plan]
    private let lock = NSLock()
    private var connectionsSeen: [Connection] = []
    private var requestsSeen: [Request] = []
    private var resetsSeen: [UInt32] = []
    private var floodBytes = 0
    private var initialWindows: [Int] = []

    init(plans: [Int: Plan], certificates: TestCertificates? = nil) throws {
        self.plans = plans
        self.certificates = try certificates ?? TestCertificates()
        let server = try RawServer { [weak self] raw in
            guard let self else { return }
            let connection = Connection(socket: raw.socket)
            let index = self.lock.withLock {
                self.connectionsSeen.append(connection)
                return self.connectionsSeen.count - 1
            }
            var buffer = Data()
            var sawPreface = false
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while case let count = recv(raw.socket, &chunk, chunk.count, 0), count > 0 {
                buffer.append(contentsOf: chunk[0..<count])
                while let consumed = self.handleNext(buffer, connection, index: index, sawPreface: &sawPreface) {
                    buffer.removeFirst(consumed)
                }
            }
            connection.condition.withLock {
                connection.isClosed = true
                connection.condition.broadcast()
            }
        }
        self.server = server
        relay = try TLSRelay(certificates: self.certificates, to: server.port, offeringHTTP2: true)
    }

    deinit { stop() }

    func stop() {
        relay?.stop()
        server?.stop()
        for connection in lock.withLock({ connectionsSeen }) {
            connection.condition.withLock {
                connection.isClosed = true
                connection.condition.broadcast()
            }
        }
    }

    var url: String { relay?.baseURL ?? "" }
    /// The port clients connect to (the relay's).
    var port: Int { relay?.port ?? 0 }
    var connections: Int { lock.withLock { connectionsSeen.count } }
    var requests: [Request] { lock.withLock { requestsSeen } }
    /// The streams the client reset.
    var resets: [UInt32] { lock.withLock { resetsSeen } }
    /// The bytes of DATA every flood has sent.
    var flooded: Int { lock.withLock { floodBytes } }
    /// The initial stream windows the client's SETTINGS named, in order.
    var clientInitialWindows: [Int] { lock.withLock { initialWindows } }

    /// Hangs up the connection numbered `index` from 0 (a reset: no GOAWAY).
    func hangUp(_ index: Int) {
        guard let connection = lock.withLock({ index < connectionsSeen.count ? connectionsSeen[index] : nil }) else { return }
        shutdown(connection.socket, Int32(SHUT_RDWR))
    }

    /// A GOAWAY (no error) naming `lastStream` on the connection numbered `index` from 0.
    func goAway(_ index: Int, lastStream: UInt32) {
        guard let connection = lock.withLock({ index < connectionsSeen.count ? connectionsSeen[index] : nil }) else { return }
        send(.goAway, 0, 0, Self.word(lastStream) + Data([0, 0, 0, 0]), on: connection)
    }

    // MARK: Frames

    private enum Kind: UInt8 {
        case data = 0, headers = 1, reset = 3, settings = 4, ping = 6, goAway = 7, windowUpdate = 8
    }

    private static let preface = Data("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    private static func word(_ value: UInt32) -> Data {
        Data([UInt8(value >> 24 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)])
    }

    private static func read32(_ bytes: Data, at offset: Int) -> UInt32 {
        let start = bytes.startIndex + offset
        return UInt32(bytes[start]) << 24 | UInt32(bytes[start + 1]) << 16 | UInt32(bytes[start + 2]) << 8 | UInt32(bytes[start + 3])
    }

    private func handleNext(_ buffer: Data, _ connection: Connection, index: Int, sawPreface: inout Bool) -> Int? {
        if !sawPreface {
            guard buffer.count >= Self.preface.count, buffer.prefix(Self.preface.count) == Self.preface else { return nil }
            sawPreface = true
            send(.settings, 0, 0, Data(), on: connection)
            return Self.preface.count
        }
        guard let frame = HTTP2FrameHeader(at: buffer) else { return nil }
        let (flags, stream, length) = (frame.flags, frame.stream, frame.length)
        let payload = Data(frame.payload(in: buffer))
        switch Kind(rawValue: frame.kind) {
        case .settings where flags & 1 == 0:
            var offset = 0
            connection.condition.withLock {
                while offset + 6 <= payload.count {
                    let identifier = UInt16(payload[payload.startIndex + offset]) << 8 | UInt16(payload[payload.startIndex + offset + 1])
                    let value = Int(Self.read32(payload, at: offset + 2))
                    if identifier == 4 {
                        let delta = value - connection.initialStreamWindow
                        connection.initialStreamWindow = value
                        for key in connection.streamWindows.keys { connection.streamWindows[key, default: 0] += delta }
                        lock.withLock { initialWindows.append(value) }
                    }
                    offset += 6
                }
                connection.condition.broadcast()
            }
            send(.settings, 1, 0, Data(), on: connection)
        case .ping where flags & 1 == 0:
            send(.ping, 1, 0, payload, on: connection)
        case .windowUpdate where payload.count == 4:
            let increment = Int(Self.read32(payload, at: 0) & 0x7fff_ffff)
            connection.condition.withLock {
                if stream == 0 { connection.window += increment } else { connection.streamWindows[stream, default: 0] += increment }
                connection.condition.broadcast()
            }
        case .reset:
            lock.withLock { resetsSeen.append(stream) }
            connection.condition.withLock {
                connection.closedStreams.insert(stream)
                connection.condition.broadcast()
            }
        case .headers where flags & 1 != 0, .data where flags & 1 != 0:
            let number = lock.withLock {
                requestsSeen.append(Request(connection: index, stream: stream))
                return requestsSeen.count
            }
            connection.condition.withLock {
                if connection.streamWindows[stream] == nil { connection.streamWindows[stream] = connection.initialStreamWindow }
            }
            answer(number, stream: stream, on: connection)
        default:
            break
        }
        return 9 + length
    }

    private func answer(_ number: Int, stream: UInt32, on connection: Connection) {
        switch plans[number] {
        case .flood?, .floodOf?:
            let limit = if case .floodOf(let limit)? = plans[number] { limit } else { Int.max }
            send(.headers, 0x4, stream, HTTP2MultiplexAttackTests.ScriptedServer.head([(31, "text/event-stream")]), on: connection)
            let thread = Thread { [self] in flood(stream, upTo: limit, on: connection) }
            thread.name = "tern.test.h2flood"
            thread.start()
        case .events(let body, let ends)?:
            send(.headers, 0x4, stream, HTTP2MultiplexAttackTests.ScriptedServer.head([(31, "text/event-stream")]), on: connection)
            send(.data, ends ? 1 : 0, stream, Data(body.utf8), on: connection)
        case .silence?:
            break
        case .trickle(let body)?:
            send(.headers, 0x4, stream, HTTP2MultiplexAttackTests.ScriptedServer.head([(31, "application/octet-stream")]), on: connection)
            let thread = Thread { [self] in trickle(body, stream, on: connection) }
            thread.name = "tern.test.h2trickle"
            thread.start()
        case nil:
            send(.headers, 0x4, stream, HTTP2MultiplexAttackTests.ScriptedServer.head([(31, "application/json"), (28, String(Self.answer.count))]),
                 on: connection)
            send(.data, 1, stream, Self.answer, on: connection)
        }
    }

    /// Events of 1 KiB, within the windows, until the stream or connection ends or `limit`
    /// bytes have gone.
    private func flood(_ stream: UInt32, upTo limit: Int, on connection: Connection) {
        var pending = Data()
        var next = 1
        var sent = 0
        while sent < limit {
            while pending.count < 16_384 {
                let head = "id: \(next)\ndata: "
                pending.append(contentsOf: (head + String(repeating: "e", count: 1022 - head.utf8.count) + "\n\n").utf8)
                next += 1
            }
            let allowed: Int? = connection.condition.withLock {
                while !connection.isClosed, !connection.closedStreams.contains(stream),
                      connection.window <= 0 || connection.streamWindows[stream, default: 0] <= 0 {
                    connection.condition.wait()
                }
                guard !connection.isClosed, !connection.closedStreams.contains(stream) else { return nil }
                let allowed = min(16_384, limit - sent, connection.window, connection.streamWindows[stream, default: 0])
                connection.window -= allowed
                connection.streamWindows[stream, default: 0] -= allowed
                return allowed
            }
            guard let allowed else { return }
            guard send(.data, 0, stream, pending.prefix(allowed), on: connection) else { return }
            pending.removeFirst(allowed)
            sent += allowed
            lock.withLock { floodBytes += allowed }
        }
    }

    /// `body` one byte per DATA frame, as many frames at once as the windows let in (at most
    /// 4 KiB of body), then an empty DATA frame that ends the stream.
    private func trickle(_ body: Data, _ stream: UInt32, on connection: Connection) {
        var sent = 0
        while sent < body.count {
            let allowed: Int? = connection.condition.withLock {
                while !connection.isClosed, !connection.closedStreams.contains(stream),
                      connection.window <= 0 || connection.streamWindows[stream, default: 0] <= 0 {
                    connection.condition.wait()
                }
                guard !connection.isClosed, !connection.closedStreams.contains(stream) else { return nil }
                let allowed = min(4096, body.count - sent, connection.window, connection.streamWindows[stream, default: 0])
                connection.window -= allowed
                connection.streamWindows[stream, default: 0] -= allowed
                return allowed
            }
            guard let allowed else { return }
            let header: [UInt8] = [0, 0, 1, Kind.data.rawValue, 0] + Array(Self.word(stream & 0x7fff_ffff))
            var frames: [UInt8] = []
            for byte in body.dropFirst(sent).prefix(allowed) {
                frames.append(contentsOf: header)
                frames.append(byte)
            }
            guard sendBytes(frames, on: connection) else { return }
            sent += allowed
        }
        send(.data, 1, stream, Data(), on: connection)
    }

    @discardableResult
    private func send(_ kind: Kind, _ flags: UInt8, _ stream: UInt32, _ payload: Data, on connection: Connection) -> Bool {
        var frame = [UInt8(payload.count >> 16 & 0xff), UInt8(payload.count >> 8 & 0xff), UInt8(payload.count & 0xff), kind.rawValue, flags]
        frame.append(contentsOf: Self.word(stream & 0x7fff_ffff))
        frame.append(contentsOf: payload)
        return sendBytes(frame, on: connection)
    }

    /// Sends `frame` (one frame or more) whole, unless the connection fails.
    private func sendBytes(_ frame: [UInt8], on connection: Connection) -> Bool {
        connection.sendLock.withLock {
            var sent = 0
            while sent < frame.count {
                let count = frame[sent...].withUnsafeBytes { Glibc.send(connection.socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard count > 0 else { return false }
                sent += count
            }
            return true
        }
    }
}
#endif
