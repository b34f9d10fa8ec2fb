import Foundation
import TernCore
import TernTesting

/// A raw server that keeps every request it reads, as text, and answers each with what `answer`
/// makes of it and of the server's own port (for an answer that points back at it).
final class KeepingServer: Sendable {
    /// Every request read, in order.
    let requests = Recorder<String>()
    private let server: RawServer

    init(_ answer: @escaping @Sendable (_ request: String, _ port: Int) -> String = { _, _ in RawServer.Connection.response("{}") }) throws {
        let requests = requests
        let port = Locked(0)
        server = try RawServer { connection in
            while let request = connection.readRequest() {
                requests.append(request)
                guard connection.send(answer(request, port.withLock { $0 })) else { return }
            }
        }
        port.withLock { $0 = server.port }
    }

    deinit { server.stop() }

    var port: Int { server.port }
    var baseURL: String { server.baseURL }

    /// The target of each request's line (`/path?query`), in order.
    var targets: [String] { requests.items.map(Self.target(of:)) }

    /// The target of a request's line: `/path?query`.
    static func target(of request: String) -> String {
        let line = request.split(separator: "\r\n").first ?? ""
        let parts = line.split(separator: " ")
        return parts.count > 1 ? String(parts[1]) : ""
    }
}
