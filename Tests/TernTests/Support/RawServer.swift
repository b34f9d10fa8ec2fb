#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A server on 127.0.0.1 that plays a script on each connection, byte for byte: for what no
/// well-behaved server does (stray responses on idle connections, lying lengths, bodies where
/// none may be). Each connection runs its script on a thread of its own; the script is told which
/// connection it has (0, 1, …), so that a test can tell a reused connection from a new one.
final class RawServer: @unchecked Sendable {
    /// A connection as a script sees it.
    final class Connection {
        let socket: Int32
        /// Which connection this is, counting from 0 in the order they were accepted.
        let index: Int
        private var buffer = [UInt8]()

        init(socket: Int32, index: Int) {
            self.socket = socket
            self.index = index
        }

        /// The next request's head and its `Content-Length` body, as text; `nil` once the client
        /// has closed the connection.
        func readRequest() -> String? {
            guard let head = readHead() else { return nil }
            let length = head.split(separator: "\r\n").lazy
                .compactMap { line -> Int? in
                    let parts = line.split(separator: ":", maxSplits: 1)
                    guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                    return Int(parts[1].trimmingCharacters(in: .whitespaces))
                }.first ?? 0
            guard let body = readBody(length) else { return nil }
            return head + body
        }

        /// The next `length` bytes, as text: a body whose head ``readHead()`` read; `nil` once
        /// the client has closed the connection before they all came.
        func readBody(_ length: Int) -> String? {
            while buffer.count < length { guard fill() else { return nil } }
            defer { buffer.removeFirst(length) }
            return String(decoding: buffer[..<length], as: UTF8.self)
        }

        /// The next request's head, through its blank line; what follows stays unread.
        func readHead() -> String? {
            while true {
                if let end = find([13, 10, 13, 10]) {
                    defer { buffer.removeFirst(end + 4) }
                    return String(decoding: buffer[..<(end + 4)], as: UTF8.self)
                }
                guard fill() else { return nil }
            }
        }

        /// Reads whatever comes within `seconds`, up to `limit` bytes: what a client sent past its
        /// request, or nothing.
        func readAvailable(for seconds: Double, limit: Int = 1 << 20) -> [UInt8] {
            let deadline = Date().addingTimeInterval(seconds)
            while buffer.count < limit, Date() < deadline {
                var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000))) > 0, fill() else { break }
            }
            defer { buffer.removeAll() }
            return buffer
        }

        /// Reads and drops `count` bytes, keeping none: for a body too large to hold, whose length
        /// alone matters. Stops early when the client closes or `seconds` pass; returns how many.
        func discard(_ count: Int, within seconds: Double) -> Int {
            let deadline = Date().addingTimeInterval(seconds)
            var dropped = min(count, buffer.count)
            buffer.removeFirst(dropped)
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while dropped < count, Date() < deadline {
                var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000))) > 0 else { break }
                let read = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, min($0.count, count - dropped), 0) }
                guard read > 0 else { break }
                dropped += read
            }
            return dropped
        }

        /// Sends `text` as it is.
        @discardableResult
        func send(_ text: String) -> Bool { send(Array(text.utf8)) }

        /// Sends `bytes` as they are.
        @discardableResult
        func send(_ bytes: [UInt8]) -> Bool {
            var sent = 0
            while sent < bytes.count {
                let count = bytes[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard count > 0 else { return false }
                sent += count
            }
            return true
        }

        /// Waits `milliseconds`.
        func pause(_ milliseconds: Int) {
            usleep(useconds_t(milliseconds * 1000))
        }

        private func fill() -> Bool {
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return false }
            buffer.append(contentsOf: chunk[..<count])
            return true
        }

        /// Where `pattern` starts in what was read. Compared with `memcmp` in a plain loop: the
        /// generic search it replaced looked up a tuple type's metadata in the runtime at each
        /// byte (unoptimised here), and with a few hundred connections every thread of the
        /// process, libcurl's loops too, queued there under the thread sanitizer for tens of
        /// seconds.
        private func find(_ pattern: [UInt8]) -> Int? {
            buffer.withUnsafeBytes { bytes in
                pattern.withUnsafeBytes { wanted in
                    guard let start = bytes.baseAddress, let needle = wanted.baseAddress else { return nil }
                    var offset = 0
                    while offset + wanted.count <= bytes.count {
                        if memcmp(start + offset, needle, wanted.count) == 0 { return offset }
                        offset += 1
                    }
                    return nil
                }
            }
        }
    }

    let port: Int
    /// Where it listens, as a URL's host: `127.0.0.1`, or `[::1]`.
    let host: String
    private let listener: Int32
    private let script: @Sendable (Connection) -> Void
    private let lock = NSLock()
    private var accepted = 0
    private var sockets: [Int32] = []
    private var isStopped = false
    /// Whether the accept loop has ended. The listener is closed once both it has and the
    /// server is stopped, by whichever comes second: never while the loop may use it, never twice.
    private var loopEnded = false
    private var failures = 0

    /// Starts listening on 127.0.0.1 (or on ::1, IPv6's loopback, when `ipv6`); `script` plays
    /// each connection, which is closed when it returns.
    init(ipv6: Bool = false, script: @escaping @Sendable (Connection) -> Void) throws {
        let listening = CloseOnExec.socket(ipv6 ? AF_INET6 : AF_INET)
        var yes: Int32 = 1
        setsockopt(listening, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var bound = false
        var boundPort: UInt16 = 0
        if ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_addr = in6addr_loopback
            var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(listening, $0, length) == 0 && getsockname(listening, $0, &length) == 0
                }
            }
            boundPort = address.sin6_port
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(listening, $0, length) == 0 && getsockname(listening, $0, &length) == 0
                }
            }
            boundPort = address.sin_port
        }
        guard bound, listen(listening, 128) == 0 else {
            close(listening)
            throw TestError(code: Int(errno))
        }
        listener = listening
        self.script = script
        port = Int(UInt16(bigEndian: boundPort))
        host = ipv6 ? "[::1]" : "127.0.0.1"
        Thread { [self] in acceptLoop() }.start()
    }

    deinit { stop() }

    /// How many connections the server has accepted.
    var connections: Int { lock.withLock { accepted } }

    /// How many times `accept` failed, for good or not.
    var failedAccepts: Int { lock.withLock { failures } }

    /// Whether the accept loop still runs: until the server is stopped, or its listener fails
    /// for good.
    var isAccepting: Bool { lock.withLock { !loopEnded } }

    var baseURL: String { "http://\(host):\(port)" }

    /// Stops accepting and hangs up every connection.
    func stop() {
        lock.withLock {
            guard !isStopped else { return }
            isStopped = true
            // Under the lock: a connection's thread closes its socket under it too, and the loop
            // its listener, so that none of these is a number another test's socket took meanwhile.
            for socket in sockets { shutdown(socket, Int32(SHUT_RDWR)) }
            // The loop closes the listener once this wakes it; if it has ended, it left that here.
            if loopEnded { close(listener) } else { shutdown(listener, Int32(SHUT_RDWR)) }
        }
    }

    private enum Accepted {
        case connection(Int)
        case retry
        case end
    }

    /// Accepts until stopped. An error that passes (a signal, a connection reset before it was
    /// taken, no descriptor or memory free for a moment) is retried; closing the listener on it
    /// would refuse every later connection, and leave `stop()` a number that is no longer its.
    private func acceptLoop() {
        while true {
            let client = CloseOnExec.accept(listener)
            let error = errno
            let next: Accepted = lock.withLock {
                if client < 0 { failures += 1 }
                guard !isStopped else { return .end }
                guard client >= 0 else { return Self.isFatal(error) ? .end : .retry }
                sockets.append(client)
                defer { accepted += 1 }
                return .connection(accepted)
            }
            switch next {
            case .connection(let index):
                Thread { [self] in
                    script(Connection(socket: client, index: index))
                    // Closed under the lock, so that `stop()` never shuts down a number that
                    // another test's socket took meanwhile.
                    lock.withLock {
                        sockets.removeAll { $0 == client }
                        close(client)
                    }
                }.start()
            case .retry:
                // Out of descriptors or memory: some come free as other connections close.
                if error != EINTR && error != ECONNABORTED { usleep(10_000) }
            case .end:
                if client >= 0 { close(client) }
                lock.withLock {
                    loopEnded = true
                    if isStopped { close(listener) }
                }
                return
            }
        }
    }

    /// Whether `accept` failed with an error that no retry mends: the listener is no longer one
    /// (shut down, closed, not a socket).
    private static func isFatal(_ error: Int32) -> Bool {
        [EBADF, EINVAL, ENOTSOCK, EOPNOTSUPP, EFAULT].contains(error)
    }
}

extension RawServer {
    /// Copies bytes both ways between two sockets until either side closes.
    static func relay(_ first: Int32, _ second: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            var sockets = [pollfd(fd: first, events: Int16(POLLIN), revents: 0), pollfd(fd: second, events: Int16(POLLIN), revents: 0)]
            guard poll(&sockets, 2, 10_000) > 0 else { return }
            for (from, to) in [(0, second), (1, first)] where sockets[from].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { recv(sockets[from].fd, $0.baseAddress, $0.count, 0) }
                guard count > 0, buffer.withUnsafeBytes({ Glibc.send(to, $0.baseAddress, count, Int32(MSG_NOSIGNAL)) }) == count else { return }
            }
        }
    }
}

extension RawServer.Connection {
    /// A whole response with `body`, its length stated, the connection kept open.
    static func response(_ body: String, status: String = "200 OK", headers: String = "") -> String {
        "HTTP/1.1 \(status)\r\nContent-Length: \(body.utf8.count)\r\nContent-Type: text/plain\r\n\(headers)\r\n\(body)"
    }
}
