import Foundation
import Testing
import Tern
import TernTesting

/// The test servers' sockets are close-on-exec, listeners and connections alike: a child
/// process a test starts (an exit test's, openssl) inherits none of them, so a connection a
/// server closes reaches its client at once, not when the child ends.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ServerSocketInheritanceTests {
    /// The descriptors this process holds on `port`, and whether each is close-on-exec.
    private func closeOnExec(on port: Int) -> [Bool] {
        TCPSockets.serverEnds(on: port).flatMap(TCPSockets.descriptors(of:)).map { fcntl($0, F_GETFD) & FD_CLOEXEC != 0 }
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
        #expect(await eventually { closeOnExec(on: server.port).count == 2 })
        #expect(closeOnExec(on: server.port) == [true, true])
    }
}
