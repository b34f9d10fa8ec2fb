import Foundation
import Tern
import TernTesting

/// A loopback server with one collection of five products, paginated in each style Tern
/// follows, and in the ways servers get it wrong. It records every request it answers.
///
/// Products are named after the query (`q`, "item" without one): `boots-1` … `boots-5`, priced
/// 1 to 5. Any route takes `delay=<ms>`, or `stall=always` or `stall=first` (the server's first
/// request only): no answer until the client hangs up, or a minute has passed (FoundationNetworking
/// under the thread sanitizer was seen to take over ten seconds to cancel). Filters come back in
/// each product's name (`color=red` → `item-1-red`). Bodies are written with sorted keys, the
/// same bytes for the same products, as a real server's would be.
final class CatalogServer: Sendable {
    let server: LoopbackServer
    let requests = Recorder<RecordedRequest>()
    /// An API pointed at it.
    let api: TestAPI

    init() throws {
        let requests = requests
        server = try LoopbackServer { request in
            requests.append(request)
            switch request.value(of: "stall") {
            case "first" where requests.items.count == 1, "always": return ServerResponse().with(.stall(60))
            default: break
            }
            let response = Self.route(request)
            guard let delay = Int(request.value(of: "delay") ?? "") else { return response }
            return response.with(.delayed(Double(delay) / 1000))
        }
        api = try TestAPI(baseURL: server.baseURL)
    }

    var baseURL: String { server.baseURL }

    /// The query values each request for `path` carried under `name`, in order.
    func sent(_ name: String, to path: String) -> [String?] {
        requests.items.filter { $0.path == path }.map { $0.value(of: name) }
    }

    static func route(_ request: RecordedRequest) -> ServerResponse {
        let size = 2
        switch request.path {
        case "/numbered":
            // ?page=N (from 1), two products a page, then an empty page.
            let page = Int(request.value(of: "page") ?? "") ?? 1
            return json(products(request, from: (page - 1) * size, count: size))
        case "/ignoring":
            // Ignores the page number: the same two products every time.
            return json(products(request, from: 0, count: size))
        case "/cursor":
            // {"data": {"items": […]}, "meta": {"next": "c2"}} and the same cursor in X-Next.
            let start = Int(request.value(of: "after")?.dropFirst() ?? "") ?? 0
            let next = start + size < 5 ? "c\(start + size)" : nil
            let body = CursorPage(data: .init(items: products(request, from: start, count: size)), meta: .init(next: next))
            var response = json(body)
            if let next { response.headers["X-Next"] = next }
            return response
        case "/cursor/numeric":
            // {"items": […], "next": 2}: a number for a cursor, `null` at the end.
            let start = Int(request.value(of: "after") ?? "") ?? 0
            let next = start + size < 5 ? "\(start + size)" : "null"
            let items = String(decoding: json(products(request, from: start, count: size)).body, as: UTF8.self)
            return .json(#"{"items": \#(items), "next": \#(next)}"#)
        case "/cursor/stuck":
            // Always hands back the same cursor (with a different page each time).
            return .json(#"{"items": [{"name": "stuck-\#(request.value(of: "cursor") ?? "")", "price": 1}], "next": "same"}"#)
        case "/linked":
            // GitHub's shape: absolute first/prev/next/last links, no next on the last page.
            let page = Int(request.value(of: "page") ?? "") ?? 1
            let last = 3
            let url = { (page: Int) in "http://127.0.0.1:\(request.port)/linked?page=\(page)&per_page=\(size)" }
            var links = [#"<\#(url(1))>; rel="first""#]
            if page > 1 { links.append(#"<\#(url(page - 1))>; rel="prev""#) }
            if page < last { links.append(#"<\#(url(page + 1))>; rel="next""#) }
            links.append(#"<\#(url(last))>; rel="last""#)
            var response = json(products(request, from: (page - 1) * size, count: size))
            response.headers["Link"] = links.joined(separator: ", ")
            return response
        case "/linked/relative":
            // A relative next link, one Link field per relation.
            let page = Int(request.value(of: "page") ?? "") ?? 1
            var response = json(products(request, from: (page - 1) * size, count: size))
            if page < 3 { response.repeatedFields = [("Link", #"<relative?page=\#(page + 1)>; REL="Next Last""#), ("Link", "<relative>; rel=first")] }
            return response
        case "/linked/loop":
            // Page 1 links to page 2, and page 2 back to page 1.
            let page = Int(request.value(of: "page") ?? "") ?? 1
            var response = json(products(request, from: (page - 1) * size, count: size))
            response.headers["Link"] = #"<loop?page=\#(page == 1 ? 2 : 1)>; rel="next""#
            return response
        case "/linked/away":
            // A next link to another origin, named by the query's `to`.
            var response = json(products(request, from: 0, count: size))
            response.headers["Link"] = "<\(request.value(of: "to") ?? "")>; rel=next"
            return response
        case "/search":
            // POST with a JSON body: the body's term names the products.
            let term = (try? JSONDecoder().decode([String: String].self, from: request.body))?["term"] ?? "none"
            let page = Int(request.value(of: "page") ?? "") ?? 1
            return json(page > 1 ? [] : [Product(name: term, price: 1)])
        default:
            return .json(#"{"code": 404, "message": "no route"}"#, status: 404)
        }
    }

    static func json(_ value: some Encodable) -> ServerResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return .json(value, encoder: encoder)
    }

    /// Up to `count` products from `start`, named after the request's query and filters.
    static func products(_ request: RecordedRequest, from start: Int, count: Int) -> [Product] {
        let stem = request.value(of: "q") ?? "item"
        let color = request.value(of: "color").map { "-\($0)" } ?? ""
        return (min(start, 5)..<min(start + count, 5)).map { Product(name: "\(stem)-\($0 + 1)\(color)", price: $0 + 1) }
    }

    struct CursorPage: Encodable {
        struct Items: Encodable { let items: [Product] }
        struct Meta: Encodable { let next: String? }
        let data: Items
        let meta: Meta
    }
}

extension RecordedRequest {
    /// The last value of the query item `name`, if there is one.
    func value(of name: String) -> String? {
        queryItems.last { $0.name == name }?.value
    }

    /// The port the request was sent to, from its `Host` header.
    var port: String {
        headers["Host"].flatMap { $0.split(separator: ":").last.map(String.init) } ?? ""
    }
}
