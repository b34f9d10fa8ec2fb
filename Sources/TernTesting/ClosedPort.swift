#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A port of 127.0.0.1 that refuses every connection, for tests of unreachable servers.
///
/// The port stays reserved for as long as this lives, so no other server (another test running
/// in parallel, say) can start listening there; a server's port freed by ``LoopbackServer/stop()``
/// could be taken at once.
///
/// ```swift
/// let closed = try ClosedPort()
/// let shop = ShopAPI(client: APIClient(configuration: APIConfiguration(baseURL: closed.baseURL)))   // every request fails: connection refused
/// ```
public final class ClosedPort: Sendable {
    /// The reserved port.
    package let port: Int
    private let socket: Int32

    /// Reserves a free port without listening on it.
    ///
    /// - Throws: `POSIXError` if no socket could be opened or bound.
    public init() throws {
        (socket, port) = try Socket.bind()
    }

    deinit {
        close(socket)
    }

    /// `http://127.0.0.1:<port>`
    public var baseURL: String { "http://127.0.0.1:\(port)" }
}
