/// What an ``HTTPCache`` did for a request.
public enum CacheOutcome: String, Sendable, Equatable {
    /// Answered from the cache, fresh: nothing went to the server.
    case hit
    /// Answered from the cache, stale, as the request allowed (`max-stale`).
    case stale
    /// The server said the kept response is still good (`304`): answered with it, refreshed.
    case revalidated
    /// Not answered from what was kept: by the server (and kept, if it may be), or, to a
    /// request that asked for nothing else (`only-if-cached`) when nothing kept would do, with the
    /// cache's own `504`, which nothing sent.
    case miss
}
