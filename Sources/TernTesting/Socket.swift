#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The POSIX calls, with the differences between Linux and Apple platforms in one place.
enum Socket {
    /// A socket listening on a free port of 127.0.0.1, and that port. It does not block: the
    /// server waits in `poll`, so that `accept` never holds its thread once a waiting client has
    /// gone, and stopping never waits for a client to come.
    static func listen() throws -> (socket: Int32, port: Int) {
        let bound = try bind(reusingAddress: true)
        guard listenOnSocket(bound.socket, 256) == 0,
              fcntl(bound.socket, F_SETFL, fcntl(bound.socket, F_GETFL) | O_NONBLOCK) == 0 else { throw closing(bound.socket) }
        return bound
    }

    /// A socket bound to a free port of 127.0.0.1, not listening (connections to it are
    /// refused), and that port.
    static func bind(reusingAddress: Bool = false) throws -> (socket: Int32, port: Int) {
        #if canImport(Glibc)
        let socket = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let socket = socket(AF_INET, SOCK_STREAM, 0)
        if socket >= 0 { _ = fcntl(socket, F_SETFD, FD_CLOEXEC) }
        #endif
        guard socket >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        if reusingAddress {
            var one: Int32 = 1
            setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bindSocket(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, let port = port(of: socket) else { throw closing(socket) }
        return (socket, port)
    }

    /// The port a bound socket got; `nil` with `errno` set if it cannot be read.
    private static func port(of socket: Int32) -> Int? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        return result == 0 ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    /// The error in `errno`, once `socket` is closed.
    private static func closing(_ socket: Int32) -> POSIXError {
        let error = POSIXError(.init(rawValue: errno) ?? .EIO)
        close(socket)
        return error
    }

    /// A connection waiting on `listener`, made close-on-exec: a child process a test starts
    /// (an exit test's) inherits none, and so cannot hold a connection open after the server
    /// closed it. (`accept4`, which would do both at once, is not in Swift's Glibc.) -1 with
    /// `errno` set when none is taken.
    static func accept(_ listener: Int32) -> Int32 {
        let socket = acceptOnSocket(listener)
        if socket >= 0 { _ = fcntl(socket, F_SETFD, FD_CLOEXEC) }
        return socket
    }

    /// Sets blocking (Apple platforms hand accepted sockets the listener's non-blocking flag),
    /// no-delay (answers go out at once) and, on Apple platforms, no SIGPIPE.
    static func configure(_ socket: Int32) {
        _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) & ~O_NONBLOCK)
        var one: Int32 = 1
        setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
        setsockopt(socket, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    /// Sends without raising SIGPIPE when the peer has gone.
    static func send(_ socket: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
        Glibc.send(socket, bytes, count, Int32(MSG_NOSIGNAL))
        #else
        Darwin.send(socket, bytes, count, 0)
        #endif
    }
}

/// `listen(2)`, named apart from ``Socket/listen()``.
private func listenOnSocket(_ socket: Int32, _ backlog: Int32) -> Int32 {
    listen(socket, backlog)
}

/// `accept(2)`, named apart from ``Socket/accept(_:)``.
private func acceptOnSocket(_ socket: Int32) -> Int32 {
    accept(socket, nil, nil)
}

/// `bind(2)`, named apart from ``Socket/bind(reusingAddress:)``.
private func bindSocket(_ socket: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    bind(socket, address, length)
}
