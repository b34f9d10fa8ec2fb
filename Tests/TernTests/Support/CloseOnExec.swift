#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The sockets the tests' own servers and clients open, close-on-exec from the moment they are
/// made: a child process a test starts (an exit test's, openssl) inherits none of them, and so
/// cannot hold open a connection that the test closed.
enum CloseOnExec {
    /// A TCP socket of `family` (`AF_INET` or `AF_INET6`); -1 with `errno` set if none is made.
    static func socket(_ family: Int32 = AF_INET) -> Int32 {
        Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    }

    /// A connection waiting on `listener`; -1 with `errno` set when none is taken. With
    /// `accept4`, marked as it is made: after `accept`, a child that another thread starts
    /// before the mark inherits it.
    static func accept(_ listener: Int32) -> Int32 {
        if let accept4 = acceptMarking.function { return accept4(listener, nil, nil, Int32(SOCK_CLOEXEC.rawValue)) }
        let socket = Glibc.accept(listener, nil, nil)
        if socket >= 0 { _ = fcntl(socket, F_SETFD, FD_CLOEXEC) }
        return socket
    }

    /// A TCP socket connected to `port` on 127.0.0.1, as a proxy's to where it was asked to go;
    /// `nil` (and nothing left open) when the connection is refused.
    static func connected(toLoopbackPort port: Int) -> Int32? {
        let made = socket()
        guard made >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(made, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else {
            close(made)
            return nil
        }
        return made
    }

    /// Whether `descriptor` is close-on-exec.
    static func isSet(on descriptor: Int32) -> Bool {
        fcntl(descriptor, F_GETFD) & FD_CLOEXEC != 0
    }

    private typealias Accept4 = @convention(c) (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32) -> Int32

    private struct Function: @unchecked Sendable {
        let function: Accept4?
    }

    /// glibc's `accept4`, which Swift's Glibc does not import.
    private static let acceptMarking = Function(function: dlsym(nil, "accept4").map { unsafeBitCast($0, to: Accept4.self) })
}
