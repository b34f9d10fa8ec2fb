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
