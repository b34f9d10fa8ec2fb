import Foundation
import TernTesting

/// The process's TCP connections to a port of 127.0.0.1, as the kernel lists them: for a test
/// that checks a client closed its socket, not only that a server saw it go.
///
/// A connection's client end is open while a descriptor of this process holds it: closed, it
/// leaves the list or stays on it with no descriptor (FIN-WAIT, TIME-WAIT).
enum TCPSockets {
    /// One line of `/proc/net/tcp`.
    struct Connection: Equatable, CustomStringConvertible {
        let localPort: Int
        let remotePort: Int
        /// The kernel's state: "01" established, "04"/"05" FIN-WAIT-1/2, "06" TIME-WAIT,
        /// "08" CLOSE-WAIT, "0A" listening.
        let state: String
        /// How many bytes came that its owner has not read yet.
        let unread: Int
        /// The socket's inode, 0 once no descriptor holds it.
        let inode: Int

        var description: String { "\(localPort)->\(remotePort) state \(state) unread \(unread) inode \(inode)" }
    }

    /// The IPv4 TCP connections the kernel knows, of every process, each socket once: the kernel
    /// reads its table out in pieces, and a socket that moves meanwhile can be listed twice.
    static func connections() -> [Connection] {
        guard let text = read("/proc/net/tcp") else { return [] }
        var seen = Set<Int>()
        return text.split(separator: "\n").dropFirst().compactMap { line -> Connection? in
            let fields = line.split(separator: " ")
            // sl local remote st tx_queue:rx_queue tr:when retrnsmt uid timeout inode …
            guard fields.count > 9, let local = afterColon(fields[1]), let remote = afterColon(fields[2]),
                  let unread = afterColon(fields[4]), let inode = Int(fields[9]) else { return nil }
            guard inode == 0 || seen.insert(inode).inserted else { return nil }
            return Connection(localPort: local, remotePort: remote, state: String(fields[3]), unread: unread, inode: inode)
        }
    }

    /// The client ends of connections to `port` that a descriptor of this process holds open.
    static func clientEnds(to port: Int) -> [Connection] {
        let held = socketInodes()
        return connections().filter { $0.remotePort == port && $0.inode != 0 && held.contains($0.inode) }
    }

    /// The sockets on `port` a descriptor of this process holds: a server's listener and the
    /// server's ends of its connections.
    static func serverEnds(on port: Int) -> [Connection] {
        let held = socketInodes()
        return connections().filter { $0.localPort == port && $0.inode != 0 && held.contains($0.inode) }
    }

    /// Every connection to or from `port`, for a failure's message.
    static func describe(port: Int) -> String {
        connections().filter { $0.localPort == port || $0.remotePort == port }.map(\.description).joined(separator: "; ")
    }

    /// The inodes of the sockets this process's descriptors name.
    static func socketInodes() -> Set<Int> {
        Set(socketDescriptors().values)
    }

    /// This process's descriptors that name `connection`'s socket.
    static func descriptors(of connection: Connection) -> [Int32] {
        socketDescriptors().filter { $0.value == connection.inode }.map(\.key)
    }

    /// This process's socket descriptors, and the inode of the socket each names.
    private static func socketDescriptors() -> [Int32: Int] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.reduce(into: [:]) { sockets, entry in
            guard let descriptor = Int32(entry),
                  let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry),
                  target.hasPrefix("socket:["), let inode = Int(target.dropFirst("socket:[".count).dropLast()) else { return }
            sockets[descriptor] = inode
        }
    }

    /// "0100007F:1F90" → 8080; "00000000:0000001A" → 26.
    private static func afterColon(_ field: Substring) -> Int? {
        field.split(separator: ":").last.flatMap { Int($0, radix: 16) }
    }

    /// A file of /proc, whose size reads as 0, read to its end.
    private static func read(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        return (try? handle.readToEnd()).map { String(decoding: $0, as: UTF8.self) }
    }
}

/// Waits until this process holds at most `open` sockets to `server`: the client closed the
/// rest. Then, where the transport under test opens its sockets close-on-exec, until the server
/// has seen them go too. FoundationNetworking's are inheritable: a child process another test
/// starts meanwhile (an exit test's) holds such a connection open after the client closed it,
/// and the server's count then says nothing of the client.
func eventuallyClosed(_ server: LoopbackServer, leaving open: Int = 0, timeout: TimeInterval = 30) async -> Bool {
    guard await eventually(timeout: timeout, { TCPSockets.clientEnds(to: server.port).count <= open }) else { return false }
    guard TestTransport.socketsCloseOnExec else { return true }
    return await eventually(timeout: timeout) { server.openConnections <= open }
}
