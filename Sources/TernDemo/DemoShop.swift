import Tern
import TernTesting

/// The shop the demo talks to when it is given no URL: a loopback server in this process.
enum DemoShop {
    static func start() throws -> LoopbackServer {
        try LoopbackServer { request in
            switch (request.method, request.path) {
            case ("GET", "/products"):
                let page = request.queryItems.first { $0.name == "page" }?.value ?? "1"
                return .json(#"[{"id": 1, "name": "Arctic tern, page \#(page)", "price": 12}, {"id": 2, "name": "Sandwich tern", "price": 9}]"#)
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
