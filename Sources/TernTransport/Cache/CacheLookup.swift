/// What the cache kept for a URL when a request for it was prepared, before it was signed: the
/// cache stage uses it again for the signed request when that names the same URL, rather
/// than look (and read a file) twice.
package struct CacheLookup: Sendable {
    /// The URL, as the cache's key reads it.
    let key: String
    /// What was kept for it, whatever the request's `Vary` fields; `nil` for nothing.
    let stored: CachedResponse?
    /// The response the cache asks the server about: set with the conditional fields it added
    /// before the request was signed, so that a `304` is answered with it.
    var revalidating: CachedResponse?
}
