import Foundation
import Testing
import Tern
import TernTesting

/// The test servers' sockets are close-on-exec, listeners and connections alike, and so are the
/// sockets of the tests' own clients and relays: a child process a test starts (an exit test's,
/// openssl) inherits none of them, so a connection a server closes reaches its client at once,
/// not when the child ends.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ServerSocketInheritanceTests {
    /// The descriptors this process holds on `port`, and whether each is close-on-exec.
    private func closeOnExec(on port: Int) -> [Bool] {
        TCPSockets.serverEnds(on: port).flatMap(TCPSockets.descriptors(of:)).map(CloseOnExec.isSet(on:))
    }

    /// The descriptors this process holds of connections to `port`, and whether each is close-on-exec.
    private func closeOnExec(to port: Int) -> [Bool] {
        TCPSockets.clientEnds(to: port).flatMap(TCPSockets.descriptors(of:)).map(CloseOnExec.isSet(on:))
    }

    @Test func aLoopbackServersSocketsCloseOnExec() async throws {
        let server = try LoopbackServer { _ in .json("{}") }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        let _: Data = try await api.request(route: api.get(endpoint: "/kept")).value
        // The listener, and the connection kept alive.
        #expect(await eventually { server.openConnections == 1 && closeOnExec(on: server.port).count == 2 })
        #expect(closeOnExec(on: server.port) == [true, true])
    }

    @Test func aRawServersSocketsCloseOnExec() async throws {
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                guard connection.send(RawServer.Connection.response("{}", headers: "Content-Type: application/json\r\n")) else { return }
            }
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        let _: Data = try await api.request(route: api.get(endpoint: "/kept")).value
        // The listener and the connection kept alive, and any other the server holds (a full run
        // once counted three): each close-on-exec.
        #expect(await eventually { closeOnExec(on: server.port).count >= 2 }, "\(TCPSockets.describe(port: server.port))")
        let flags = closeOnExec(on: server.port)
        #expect(flags.count >= 2 && flags.allSatisfy { $0 }, "\(flags): \(TCPSockets.describe(port: server.port))")
    }

    #if os(Linux)
    /// The relay's listener, the TLS connection it accepted and its own connection to the server
    /// behind, all made before the handshake (which this client never begins).
    @Test func aTLSRelaysSocketsCloseOnExec() async throws {
        let server = try RawServer { connection in _ = connection.readAvailable(for: 30, limit: 1) }
        defer { server.stop() }
        let relay = try TLSRelay(certificates: TestCertificates(), to: server.port)
        defer { relay.stop() }
        let client = try CurlConnectionsTests.socket(boundTo: 0)
        defer { close(client) }
        try CurlConnectionsTests.connect(client, to: Int32(relay.port))
        #expect(await eventually { closeOnExec(on: relay.port).count == 2 && closeOnExec(to: server.port).count == 1 })
        #expect(closeOnExec(on: relay.port) == [true, true])
        // Each descriptor of a connection to the server behind (a release run under load once
        // counted two): close-on-exec.
        let behind = closeOnExec(to: server.port)
        #expect(!behind.isEmpty && behind.allSatisfy { $0 }, "\(behind): \(TCPSockets.describe(port: server.port))")
        #expect(CloseOnExec.isSet(on: client))
    }

    /// HTTP/2's server: a relay in front of a raw server, both of them this process's.
    @Test func anHTTP2ServersSocketsCloseOnExec() async throws {
        let server = try HTTP2Server(answering: Data("{}".utf8))
        let port = try #require(URLComponents(string: server.url)?.port)
        let client = try CurlConnectionsTests.socket(boundTo: 0)
        defer { close(client) }
        try CurlConnectionsTests.connect(client, to: Int32(port))
        #expect(await eventually { closeOnExec(on: port).count == 2 })
        #expect(closeOnExec(on: port) == [true, true])
        withExtendedLifetime(server) {}
    }

    /// The listener, client and accepted sockets that `CurlConnectionsTests` (and the relay)
    /// make by hand.
    @Test func theHandMadeSocketsCloseOnExec() throws {
        let (listener, port) = try CurlConnectionsTests.listener()
        defer { close(listener) }
        let client = try CurlConnectionsTests.socket(boundTo: 0)
        defer { close(client) }
        try CurlConnectionsTests.connect(client, to: port)
        let accepted = CloseOnExec.accept(listener)
        defer { close(accepted) }
        try #require(accepted >= 0)
        #expect([listener, client, accepted].map(CloseOnExec.isSet(on:)) == [true, true, true])
    }
    #endif
}
