/// Joins a base URL and an endpoint the way people mean it, as plain strings.
///
/// - Exactly one slash between the two, however either is written.
/// - The base URL's own path is kept, and so is its query, before the endpoint's.
/// - An endpoint that is itself an absolute URL (it has a scheme) is used as it is.
/// - The endpoint's fragment, if any, ends the result.
///
/// | base | endpoint | result |
/// |---|---|---|
/// | `https://x/api/v2` | `/products` | `https://x/api/v2/products` |
/// | `https://x/api/v2/` | `products?page=2` | `https://x/api/v2/products?page=2` |
/// | `https://x/api?key=k` | `/items?page=2` | `https://x/api/items?key=k&page=2` |
/// | `https://x/api` | `https://y/z` | `https://y/z` |
enum EndpointJoining {
    static func join(base: String, endpoint: String) -> String {
        if AbsoluteURL.hasScheme(endpoint) { return endpoint }
        // The usual case, with no query or fragment on either side, needs no splitting.
        if !containsQueryOrFragment(base), !containsQueryOrFragment(endpoint) {
            return joinedPaths(base, endpoint)
        }
        let base = split(base)
        let endpoint = split(endpoint)
        var path = base.path
        if !endpoint.path.isEmpty {
            path = joined(path, endpoint.path)
        }
        let query = [base.query, endpoint.query].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: "&")
        var joined = path
        if !query.isEmpty { joined += "?" + query }
        if let fragment = endpoint.fragment ?? base.fragment { joined += "#" + fragment }
        return joined
    }

    static func containsQueryOrFragment(_ string: String) -> Bool {
        string.utf8.contains { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
    }

    private static func split(_ string: String) -> (path: String, query: String?, fragment: String?) {
        var rest = Substring(string)
        var fragment: String?
        if let hash = rest.firstIndex(of: "#") {
            fragment = String(rest[rest.index(after: hash)...])
            rest = rest[..<hash]
        }
        var query: String?
        if let mark = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: mark)...])
            rest = rest[..<mark]
        }
        return (String(rest), query, fragment)
    }

    /// `path` and `endpoint`, with no query or fragment, joined with exactly one slash between
    /// them; `path` alone for an empty `endpoint`.
    static func joinedPaths(_ path: String, _ endpoint: String) -> String {
        endpoint.isEmpty ? path : joined(path, endpoint)
    }

    /// `path` and `endpoint` with exactly one slash between them. Works on the UTF-8 bytes: a
    /// slash is one byte and never part of another character, and this runs for every request.
    private static func joined(_ path: String, _ endpoint: String) -> String {
        let slash = UInt8(ascii: "/")
        var path = path, endpoint = endpoint
        return path.withUTF8 { path in
            endpoint.withUTF8 { endpoint in
                var end = path.count
                while end > 0, path[end - 1] == slash { end -= 1 }
                var start = 0
                while start < endpoint.count, endpoint[start] == slash { start += 1 }
                let count = end + 1 + endpoint.count - start
                return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { joined in
                    _ = joined[..<end].initialize(fromContentsOf: path[..<end])
                    joined[end] = slash
                    _ = joined[(end + 1)...].initialize(fromContentsOf: endpoint[start...])
                    return String(decoding: joined, as: UTF8.self)
                }
            }
        }
    }
}
