import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a private cache may do, as RFC 9111 says: which responses it may keep, which it may
/// answer a request with, and which requests make it forget. Values in, a decision out.
enum CacheRules {
    /// What a request asks of the cache: its `Cache-Control` (or `Pragma: no-cache` without one)
    /// and the `URLRequest.CachePolicy` it was made with.
    struct Request {
        let control: CacheControl
        let noCache: Bool
        let onlyIfCached: Bool
        /// Whether anything kept may answer it, however old (`.returnCacheDataElseLoad` and
        /// `.returnCacheDataDontLoad`).
        let anyAge: Bool
        /// Whether it goes to the server unconditionally (`.reloadIgnoringLocalCacheData`).
        let reload: Bool

        init(_ request: URLRequest) {
            let headers = request.allHTTPHeaderFields ?? [:]
            let value = { (name: String) in headers.first { $0.key.caseInsensitiveEquals(name) }?.value }
            control = CacheControl(value("Cache-Control").map { [$0] } ?? [])
            let pragmaNoCache = value("Cache-Control") == nil && (value("Pragma")?.lowercased().contains("no-cache") ?? false)
            let policy = request.cachePolicy
            noCache = control.has("no-cache") || pragmaNoCache || policy == .reloadRevalidatingCacheData
            onlyIfCached = control.has("only-if-cached") || policy == .returnCacheDataDontLoad
            anyAge = policy == .returnCacheDataElseLoad || policy == .returnCacheDataDontLoad
            reload = policy == .reloadIgnoringLocalCacheData || policy == .reloadIgnoringLocalAndRemoteCacheData
        }
    }

    /// How a request is answered.
    enum Decision: Equatable {
        /// With the kept response, fresh.
        case fresh(CachedResponse)
        /// With the kept response, stale, as the request allowed (`max-stale`).
        case stale(CachedResponse)
        /// By the server, asked whether the kept response is still good.
        case revalidate(CachedResponse)
        /// By the server.
        case network
        /// By nobody: the request wants only what is kept, and nothing kept will do: a 504.
        case unsatisfiable
    }

    /// How to answer `request`, given what is kept for its URL (if its `Vary` fields match).
    static func decide(_ request: Request, kept: CachedResponse?, now: Date) -> Decision {
        guard !request.reload else { return request.onlyIfCached ? .unsatisfiable : .network }
        guard let kept else { return request.onlyIfCached ? .unsatisfiable : .network }
        let age = kept.age(at: now)
        let lifetime = kept.freshnessLifetime
        let response = kept.cacheControl
        if request.anyAge, !response.has("no-cache") { return age < lifetime ? .fresh(kept) : .stale(kept) }
        let mustAsk = request.noCache || response.has("no-cache")
        var fresh = !mustAsk && age < lifetime
        if let maxAge = request.control.seconds("max-age"), age > TimeInterval(maxAge) { fresh = false }
        if let minFresh = request.control.seconds("min-fresh"), lifetime - age < TimeInterval(minFresh) { fresh = false }
        if fresh { return .fresh(kept) }
        if !mustAsk, !response.has("must-revalidate"), let maxStale = request.control.maxStale,
           maxStale.map({ age - lifetime <= TimeInterval($0) }) ?? true {
            return .stale(kept)
        }
        if request.onlyIfCached { return .unsatisfiable }
        return kept.hasValidator ? .revalidate(kept) : .network
    }

    /// Whether a response to `request` may be kept (RFC 9111, §3): the request is a `GET` that
    /// does not say `no-store`, and the response may be kept for it (``mayKeep(_:credentialed:)``).
    static func mayStore(_ response: CachedResponse, for request: URLRequest) -> Bool {
        request.httpMethod ?? "GET" == "GET" && !Request(request).control.has("no-store")
            && mayKeep(response, credentialed: hasCredentials(request))
    }

    /// Whether `response` may be kept (§3), however it came (a `GET`'s answer, or a kept one a
    /// `304` or a `HEAD` updated): final and whole, no challenge (`401`, `407`: it asks for
    /// credentials, and kept, it answered the request sent again with them), not saying
    /// `no-store`, not varying on everything, with something to keep it for (freshness or a
    /// validator); for a request with credentials only when it says it may be shared (§3.5:
    /// `public`, `must-revalidate` or `s-maxage`) and not `private`, as if the cache were
    /// shared, since an app's cache can outlast the account that filled it.
    static func mayKeep(_ response: CachedResponse, credentialed: Bool) -> Bool {
        let control = response.cacheControl
        guard (200...599).contains(response.status), ![206, 304, 401, 407].contains(response.status),
              !control.has("no-store"), !response.varyNames.contains("*") else { return false }
        // `private` keeps it from a shared cache, whatever else it says (§5.2.2.7).
        if credentialed, control.has("private") || !(control.has("public") || control.has("must-revalidate") || control.has("s-maxage")) {
            return false
        }
        let explicit = control.has("max-age") || response.headers["expires"] != nil || control.has("public") || control.has("private")
        guard explicit || CachedResponse.heuristicallyCacheable.contains(response.status) else { return false }
        return response.freshnessLifetime > 0 || response.hasValidator
    }

    /// Whether `request` carries credentials: `Authorization`, or a user and password in its
    /// URL, which the transport sends as one.
    static func hasCredentials(_ request: URLRequest) -> Bool {
        request.value(forHTTPHeaderField: "Authorization") != nil || HTTPCache.credential(":userinfo", of: request) != nil
    }

    /// Whether `method` is one that changes what the server has (RFC 9110, §9.2.1): its
    /// successful responses make the cache forget what it keeps for the URLs they touch.
    static func isUnsafe(_ method: String) -> Bool {
        !["GET", "HEAD", "OPTIONS", "TRACE"].contains(method.uppercased())
    }

    /// The URLs a successful unsafe request to `url` makes the cache forget (§4.4): the URL
    /// itself, and its response's `Location` and `Content-Location` when on the same origin.
    static func invalidated(by url: URL, headers: [String: String]) -> [String] {
        var urls = [CacheKey.of(url)]
        for name in ["location", "content-location"] {
            guard let value = headers[name], let target = URL(string: value, relativeTo: url)?.absoluteURL,
                  target.scheme?.lowercased() == url.scheme?.lowercased(), target.host?.lowercased() == url.host?.lowercased(),
                  CacheKey.port(of: target) == CacheKey.port(of: url) else { continue }
            urls.append(CacheKey.of(target))
        }
        return urls
    }
}

/// The key a response is kept under: its URL, scheme and host in lower case, without its
/// scheme's own port, dot segments or fragment, and without a user and password, which are the
/// request's credentials (compared as digests, never written). URLs the transports send as one
/// (`http://h:80/a/../b` goes out as `http://h/b`) are one key, so that an unsafe request to one
/// spelling makes the cache forget the other.
enum CacheKey {
    static func of(_ url: URL) -> String {
        // Most URLs are written so already: read without taking them apart, byte by byte (as
        // characters, with Foundation's `contains` and Unicode's `isUppercase`, this was a
        // tenth of a cache hit's time). Anything but ASCII before the path, the scheme's own
        // port written out, or a dot after a slash in the path goes the long way.
        let text = url.absoluteString
        let bytes = text.utf8
        let authorityEnd = bytes.dropFirst(8).firstIndex(of: UInt8(ascii: "/")) ?? bytes.endIndex
        let path = bytes[authorityEnd..<(bytes[authorityEnd...].firstIndex(of: UInt8(ascii: "?")) ?? bytes.endIndex)]
        let authority = bytes[..<authorityEnd]
        let ownPort = text.hasPrefix("http://") ? ":80" : text.hasPrefix("https://") ? ":443" : nil
        let namesItsDefaultPort = ownPort.map { authority.reversed().starts(with: $0.utf8.reversed()) } ?? false
        if !bytes.contains(UInt8(ascii: "#")), !namesItsDefaultPort,
           !authority.contains(where: { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || $0 >= 0x80 || $0 == UInt8(ascii: "@") }),
           !zip(path, path.dropFirst()).contains(where: { $0 == UInt8(ascii: "/") && $1 == UInt8(ascii: ".") }) {
            return text
        }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return url.absoluteString }
        components.scheme = components.scheme?.lowercased()
        components.host = components.host?.lowercased()
        if components.port == defaultPort(components.scheme) { components.port = nil }
        components.percentEncodedPath = withoutDotSegments(components.percentEncodedPath)
        components.fragment = nil
        (components.user, components.password) = (nil, nil)
        return components.string ?? url.absoluteString
    }

    /// The port a request to `url` goes to: its own, or its scheme's.
    static func port(of url: URL) -> Int? {
        url.port ?? defaultPort(url.scheme?.lowercased())
    }

    private static func defaultPort(_ scheme: String?) -> Int? {
        switch scheme {
        case "http": 80
        case "https": 443
        default: nil
        }
    }

    /// `path` with its `.` and `..` segments taken out (RFC 3986, §5.2.4), as libcurl takes
    /// them out before sending.
    static func withoutDotSegments(_ path: String) -> String {
        guard path.contains("/.") else { return path }
        var kept: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            switch segment {
            case ".": if isLast { kept.append("") }
            case "..":
                if !kept.isEmpty { kept.removeLast() }
                if isLast { kept.append("") }
            default: kept.append(segment)
            }
        }
        return "/" + kept.joined(separator: "/")
    }
}
