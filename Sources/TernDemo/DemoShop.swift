import Synchronization
import Tern
import TernTesting
import Foundation

/// The shop the demo talks to when it is given no URL: a loopback server in this process.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
enum DemoShop {
    /// The export's bytes: 2 MiB that a first download gets only half of.
    static let export = Data((0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) })

    /// Starts the shop; `/moved` redirects to `elsewhere`, another origin.
    static func start(elsewhere: String) throws -> LoopbackServer {
        let flaky = FlakyCounter()
        return try LoopbackServer { request in
            switch (request.method, request.path) {
            case ("GET", "/export"):
                // Cut halfway unless the client asks for the rest: the connection drops mid-file.
                let file = ServerResponse.file(export, for: request, etag: #""export-1""#)
                return request.headers["Range"] == nil ? file.with(.truncated(afterBytes: export.count / 2)) : file
            case ("GET", "/moved"):
                return ServerResponse(status: 302, headers: ["Location": elsewhere + "/whoami"])
            case ("POST", "/token"):
                return .json(#"{"token": "fresh"}"#)
            case ("GET", "/orders"):
                return request.headers["Authorization"] == "Bearer fresh" ? .json(#"[{"id": 7, "name": "Order 7", "price": 21}]"#)
                    : .json(#"{"code": 401, "message": "token expired"}"#, status: 401)
            case ("GET", "/flaky"):
                return flaky.next() <= 2 ? .json(#"{"code": 503, "message": "busy"}"#, status: 503) : .json("[]")
            case ("GET", "/products"):
                let page = request.queryItems.first { $0.name == "page" }?.value ?? "1"
                return .json(#"[{"id": 1, "name": "Arctic tern, page \#(page)", "price": 12}, {"id": 2, "name": "Sandwich tern", "price": 9}]"#)
            case ("GET", "/catalog"):
                // Three pages of two birds, each linking to the next as GitHub does.
                let page = Int(request.queryItems.first { $0.name == "page" }?.value ?? "") ?? 1
                let birds = ["Arctic tern", "Sandwich tern", "Common tern", "Little tern", "Roseate tern", "Sooty tern"]
                let items = birds.enumerated().dropFirst((page - 1) * 2).prefix(2).map { #"{"id": \#($0.offset), "name": "\#($0.element)", "price": 5}"# }
                var response = ServerResponse.json("[" + items.joined(separator: ", ") + "]")
                if page < 3 { response.headers["Link"] = #"</catalog?page=\#(page + 1)>; rel="next", </catalog?page=3>; rel="last""# }
                return response
            case ("POST", "/products"):
                return ServerResponse(status: 201, headers: ["Content-Type": "application/json"], body: request.body)
            case ("POST", "/login"):
                let form = String(decoding: request.body, as: UTF8.self)
                return form.contains("password=tern") ? .json(#"{"token": "t-42"}"#)
                    : .json(#"{"code": 401, "message": "wrong password"}"#, status: 401)
            case ("PATCH", let path) where path.hasSuffix("/picture"):
                return .json(#"{"bytes": \#(request.body.count), "caption": "front"}"#)
            case ("DELETE", _):
                return ServerResponse(status: 204)
            case ("GET", "/slow"):
                return ServerResponse().with(.stall(5))
            default:
                return .json(#"{"code": 404, "message": "no such route"}"#, status: 404)
            }
        }
    }
}

/// Another origin, which says what credentials reached it.
enum Elsewhere {
    static func start() throws -> LoopbackServer {
        try LoopbackServer { request in
            .json(#"{"authorization": "\#(request.headers["Authorization"] ?? "none")"}"#)
        }
    }
}

/// Counts calls to the flaky route: the first two fail.
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *)
private final class FlakyCounter: Sendable {
    private let count = Mutex(0)
    func next() -> Int { count.withLock { $0 += 1; return $0 } }
}
