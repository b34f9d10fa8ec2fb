import Foundation
import Testing

/// A server that records every request's head as it came, and answers by path: `/slow` after
/// 1.5 s, `/s/<code>` that status, `/hop` a 302 to `localhost` (another origin), `/login` with
/// a cookie, `/big` 300 bytes, anything else `{"target": "<request target>"}`.
final class HeadRecordingServer: Sendable {
    let heads = Recorder<String>()
    let raw: RawServer

    init() throws {
        let heads = heads
        let port = Recorder<Int>()
        raw = try RawServer { connection in
            while let head = connection.readRequest() {
                heads.append(head)
                let target = Self.target(of: head)
                let path = String(target.prefix { $0 != "?" })
                var status = "200 OK", extra = "", body = #"{"target": "\#(target)"}"#
                if path == "/slow" { connection.pause(1500) }
                if path.hasPrefix("/s/") { status = "\(path.dropFirst(3)) Status" }
                if path == "/hop" {
                    status = "302 Found"
                    extra = "Location: http://localhost:\(port.items.first ?? 0)/landed\r\n"
                }
                if path == "/login" { extra = "Set-Cookie: jar=fromjar; Path=/\r\n" }
                if path == "/big" { body = #"{"target": "\#(String(repeating: "x", count: 300))"}"# }
                let answer = "HTTP/1.1 \(status)\r\n\(extra)Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                guard connection.send(answer) else { return }
            }
        }
        port.append(raw.port)
    }

    var url: String { raw.baseURL }

    static func target(of head: String) -> String {
        let parts = head.prefix { $0 != "\r" }.split(separator: " ")
        return parts.count > 1 ? String(parts[1]) : ""
    }

    /// Every head whose request target is `target`, in order.
    func heads(for target: String) -> [String] {
        heads.items.filter { Self.target(of: $0) == target }
    }

    /// The one head for `target`; an issue if there is not exactly one.
    func head(_ target: String, sourceLocation: SourceLocation = #_sourceLocation) -> String {
        let found = heads(for: target)
        #expect(found.count == 1, "\(target): \(found.count) heads", sourceLocation: sourceLocation)
        return found.first ?? ""
    }

    /// The values of every field named `name` in `head`.
    static func fields(_ name: String, in head: String) -> [String] {
        head.split(separator: "\r\n").dropFirst().compactMap { line in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == name.lowercased() else { return nil }
            return parts[1].trimmingCharacters(in: .whitespaces)
        }
    }

    /// The head's fields, names lowercased, sorted: what two requests sent, compared.
    static func fieldLines(of head: String) -> [String] {
        head.split(separator: "\r\n").dropFirst().map { line in
            let parts = line.split(separator: ":", maxSplits: 1)
            return parts[0].lowercased() + ":" + (parts.count == 2 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
        }.sorted()
    }
}
