#if os(Linux)
import Foundation
import Glibc
import Testing
@testable import TernTransport

/// Idle connections are told apart by both their ends: two to different peers may share a local
/// port, and the one with bytes nobody asked for waiting on it must be found out whichever of
/// them ended its transfer last.
@Suite(.onTestThreads) struct CurlConnectionsTests {
    @Test func connectionsSharingALocalPortAreCheckedApart() throws {
        let connections = CurlConnections(curl: try CurlLibrary.shared.get().api)
        let (listenerA, portA) = try Self.listener()
        let (listenerB, portB) = try Self.listener()
        defer { close(listenerA); close(listenerB) }
        // Two connections from one local port, to the two listeners.
        let clientA = try Self.socket(boundTo: 0)
        let localPort = try Self.localPort(of: clientA)
        let clientB = try Self.socket(boundTo: localPort)
        defer { close(clientA); close(clientB) }
        try Self.connect(clientA, to: portA)
        try Self.connect(clientB, to: portB)
        let serverA = CloseOnExec.accept(listenerA), serverB = CloseOnExec.accept(listenerB)
        defer { close(serverA); close(serverB) }
        #expect(serverA >= 0 && serverB >= 0)
        // A's server speaks unasked; B's does not.
        #expect(send(serverA, "HTTP/1.1 200 OK\r\n", 17, Int32(MSG_NOSIGNAL)) == 17)
        usleep(20_000)
        let endsA = CurlConnections.Ends(localPort: localPort, peerAddress: "127.0.0.1", peerPort: portA)
        let endsB = CurlConnections.Ends(localPort: localPort, peerAddress: "127.0.0.1", peerPort: portB)
        connections.idle(clientA, ends: endsA)
        connections.idle(clientB, ends: endsB)
        #expect(connections.hasStrayInput(endsA))   // known by its local port alone, B's socket was checked
        #expect(!connections.hasStrayInput(endsB))
    }

    /// The socket number of a connection that closed may be another connection's by the time
    /// it is checked: that one's input, or its hang-up, says nothing of the first.
    @Test func aSocketNumberNowAnotherConnectionsIsNotTakenForTheIdleOne() throws {
        let connections = CurlConnections(curl: try CurlLibrary.shared.get().api)
        let (listener, port) = try Self.listener()
        defer { close(listener) }
        let idle = try Self.socket(boundTo: 0)
        try Self.connect(idle, to: port)
        let idleServer = CloseOnExec.accept(listener)
        let ends = CurlConnections.Ends(localPort: try Self.localPort(of: idle), peerAddress: "127.0.0.1", peerPort: port)
        connections.idle(idle, ends: ends)
        #expect(!connections.hasStrayInput(ends))
        // The connection goes; its number is given to another, whose server has spoken and hung up.
        let other = try Self.socket(boundTo: 0)
        try Self.connect(other, to: port)
        let otherServer = CloseOnExec.accept(listener)
        #expect(send(otherServer, "HTTP/1.1 200 OK\r\n", 17, Int32(MSG_NOSIGNAL)) == 17)
        close(otherServer)
        close(idleServer)
        #expect(dup2(other, idle) == idle)
        close(other)
        defer { close(idle) }
        usleep(20_000)
        #expect(!connections.hasStrayInput(ends))
    }

    static func listener() throws -> (socket: Int32, port: Int32) {
        let listener = try socket(boundTo: 0)
        guard listen(listener, 4) == 0 else { throw TestError() }
        return (listener, try localPort(of: listener))
    }

    /// A TCP socket on 127.0.0.1:`port` (any port for 0), sharing it if another socket has it;
    /// close-on-exec, as every socket the tests open.
    static func socket(boundTo port: Int32) throws -> Int32 {
        let descriptor = CloseOnExec.socket()
        var on: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.address(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard descriptor >= 0, bound == 0 else { throw TestError() }
        return descriptor
    }

    static func connect(_ descriptor: Int32, to port: Int32) throws {
        var address = Self.address(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw TestError() }
    }

    static func localPort(of descriptor: Int32) throws -> Int32 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else { throw TestError() }
        return Int32(UInt16(bigEndian: address.sin_port))
    }

    static func address(port: Int32) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
#endif
