/// What one request asks of the caches on its way (RFC 9111, §5.2.1), the API's ``HTTPCache``
/// first: sent as its `Cache-Control`.
///
/// ```swift
/// let latest = RequestOptions(cacheDirectives: CacheDirectives(noCache: true))        // ask the server
/// let offline = RequestOptions(cacheDirectives: CacheDirectives(onlyIfCached: true))  // a 504 if nothing is kept
/// let lenient = RequestOptions(cacheDirectives: CacheDirectives(maxStale: 3600))      // up to an hour stale will do
/// ```
public struct CacheDirectives: Sendable, Equatable {
    /// Ask the server even if what is kept is fresh (revalidating it if it can).
    package var noCache: Bool
    /// Keep nothing of this request or its response.
    package var noStore: Bool
    /// Take nothing kept older than this many seconds.
    package var maxAge: Int?
    /// Take what is kept up to this many seconds past its freshness.
    package var maxStale: Int?
    /// Take only what stays fresh for at least this many seconds more.
    package var minFresh: Int?
    /// Take only what is kept, never the server: a `504` (``APIError/unacceptableStatus(_:)``)
    /// when nothing kept will do.
    package var onlyIfCached: Bool

    /// Creates directives; none by default.
    public init(noCache: Bool = false, noStore: Bool = false, maxAge: Int? = nil, maxStale: Int? = nil,
                minFresh: Int? = nil, onlyIfCached: Bool = false) {
        self.noCache = noCache
        self.noStore = noStore
        self.maxAge = maxAge
        self.maxStale = maxStale
        self.minFresh = minFresh
        self.onlyIfCached = onlyIfCached
    }

    /// The `Cache-Control` value that says them, or `nil` for none.
    var fieldValue: String? {
        var directives: [String] = []
        if noCache { directives.append("no-cache") }
        if noStore { directives.append("no-store") }
        if let maxAge { directives.append("max-age=\(max(0, maxAge))") }
        if let maxStale { directives.append("max-stale=\(max(0, maxStale))") }
        if let minFresh { directives.append("min-fresh=\(max(0, minFresh))") }
        if onlyIfCached { directives.append("only-if-cached") }
        return directives.isEmpty ? nil : directives.joined(separator: ", ")
    }
}
