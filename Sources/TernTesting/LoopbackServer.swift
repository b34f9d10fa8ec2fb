#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Tern

/// A small HTTP/1.1 server on 127.0.0.1 for tests: it records what it receives, byte for byte,
/// and answers with whatever the handler returns, misbehaviour included.
///
/// ```swift
/// let server = try LoopbackServer { request in
///     request.path == "/products" ? .json(#"[{"name":"tern"}]"#) : ServerResponse(status: 404)
/// }
/// defer { server.stop() }
/// let shop = ShopAPI(client: APIClient(configuration: APIConfiguration(baseURL: server.baseURL)))
/// ```
///
/// Each connection gets a thread; connections are kept alive; `Expect: 100-continue` is
/// answered; chunked request bodies are decoded; `TCP_NODELAY` is set, so small responses are
/// not held back by Nagle's algorithm. It listens on a free port, and only on the loopback
/// interface.
public final class LoopbackServer: Sendable {
    /// Decides the response to each request; called on the connection's thread.
    typealias Handler = @Sendable (RecordedRequest) -> ServerResponse

    /// The port it listens on.
    package let port: Int
    private let listener: Int32
    private let handler: Handler
    private let bodyLimit: Int
    private let connections = ConnectionRegistry()
    private let acceptLoopEnded = DispatchSemaphore(value: 0)

    /// Starts a server on a free port of 127.0.0.1.
    ///
    /// - Parameters:
    ///   - bodyLimit: How many bytes of each request body to keep; the rest is read and
    ///     counted, not kept, so a test can send a huge body without the server holding it.
    ///   - handler: Decides each response; called on the connection's thread.
    /// - Throws: `POSIXError` if no socket could be opened, bound or listened on.
    public init(keepingBodiesUpTo bodyLimit: Int = .max, handler: @escaping @Sendable (RecordedRequest) -> ServerResponse) throws {
        self.handler = handler
        self.bodyLimit = bodyLimit
        (listener, port) = try Socket.listen()
        let thread = Thread { [self] in
            acceptLoop()
            acceptLoopEnded.signal()
        }
        thread.name = "tern.loopback.accept"
        thread.start()
    }

    deinit {
        stop()
    }

    /// `http://127.0.0.1:<port>`
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// How many client connections are open: it drops when a client closes one, which is how a
    /// test sees that a cancelled request really stopped.
    package var openConnections: Int { connections.count }

    /// Stops listening and closes every open connection; harmless when called again. Once it
    /// returns, the port refuses connections.
    ///
    /// Tests run in parallel in one process, so a file descriptor closed here may at once be
    /// reused by another test's socket: each descriptor is closed by exactly one owner, after
    /// everyone else is done with it, never shut down or accepted on once closed.
    public func stop() {
        guard connections.stop() else { return }
        // Wakes the accept loop's poll at once on Linux; elsewhere it sees the stop within 50 ms
        // (the listener never blocks in accept).
        _ = shutdown(listener, Int32(SHUT_RDWR))
        acceptLoopEnded.wait()
        close(listener)
    }

    private func acceptLoop() {
        while !connections.isStopped {
            var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 50) > 0, !connections.isStopped else { continue }
            let client = Socket.accept(listener)
            guard client >= 0 else {
                // The client left before being accepted, or a signal: poll again. Out of
                // descriptors, say: try again shortly rather than stop serving.
                if ![EAGAIN, EWOULDBLOCK, EINTR, ECONNABORTED].contains(errno) { usleep(10_000) }
                continue
            }
            guard connections.add(client) else {
                close(client)
                return
            }
            Socket.configure(client)
            let thread = Thread { [self] in
                serve(Connection(client, bodyLimit: bodyLimit))
                connections.close(client)
            }
            thread.name = "tern.loopback.connection"
            thread.start()
        }
    }

    private func serve(_ connection: Connection) {
        while let request = connection.readRequest() {
            let response = handler(request)
            let keepAlive = request.headers["Connection"]?.lowercased() != "close"
            guard connection.write(response), keepAlive else { return }
        }
    }
}

/// The open connections, so that ``LoopbackServer/stop()`` can close them.
private final class ConnectionRegistry: Sendable {
    private struct State {
        var open: Set<Int32> = []
        var stopped = false
    }

    private let state = Locked(State())

    /// Adds a connection unless the server stopped.
    func add(_ socket: Int32) -> Bool {
        state.withLock { state in
            if !state.stopped { state.open.insert(socket) }
            return !state.stopped
        }
    }

    var count: Int { state.withLock { $0.open.count } }

    /// Forgets and closes a connection. Under the lock, so that ``stop()`` never shuts down a
    /// descriptor that was closed and handed to someone else.
    func close(_ socket: Int32) {
        state.withLock { state in
            state.open.remove(socket)
            closeSocket(socket)
        }
    }

    var isStopped: Bool { state.withLock { $0.stopped } }

    /// Marks the server stopped and shuts every connection down; `false` if it already was.
    /// Each connection's own thread then sees the end of its stream and closes it.
    func stop() -> Bool {
        state.withLock { state in
            guard !state.stopped else { return false }
            state.stopped = true
            for socket in state.open { _ = shutdown(socket, Int32(SHUT_RDWR)) }
            return true
        }
    }
}

/// `close(2)`, named apart from ``ConnectionRegistry/close(_:)``.
private func closeSocket(_ socket: Int32) {
    close(socket)
}
