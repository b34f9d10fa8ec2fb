import Foundation

extension RawServer {
    /// A server of one body kept fresh for ten minutes under an `ETag`: it answers a
    /// `Range: bytes=N-` with the rest in a `206`, and anything else with the whole in a `200`,
    /// or with its first 40,000 bytes and a closed connection when `version` says to cut.
    /// `version` is asked once a request: what to send (the body and its tag) and whether to cut.
    static func rangedBody(
        version: @escaping @Sendable () -> (body: Data, etag: String, cutsWhole: Bool)
    ) throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let (body, etag, cutsWhole) = version()
                let size = body.count
                let tag = "ETag: \(etag)\r\nCache-Control: max-age=600\r\n"
                if let range = request.components(separatedBy: "\r\n").first(where: { $0.lowercased().hasPrefix("range: bytes=") }),
                   let start = Int(range.dropFirst("range: bytes=".count).prefix { $0 != "-" }) {
                    let head = "HTTP/1.1 206 Partial Content\r\n\(tag)Content-Range: bytes \(start)-\(size - 1)/\(size)\r\nContent-Length: \(size - start)\r\n\r\n"
                    guard connection.send(head), connection.send(Array(body[start...])) else { return }
                    continue
                }
                guard connection.send("HTTP/1.1 200 OK\r\n\(tag)Content-Length: \(size)\r\n\r\n") else { return }
                if cutsWhole {
                    connection.send(Array(body[..<40_000]))
                    return
                }
                guard connection.send(Array(body)) else { return }
            }
        }
    }
}
