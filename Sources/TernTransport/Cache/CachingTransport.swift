import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport that answers from an ``HTTPCache`` where RFC 9111 lets it, and sends the rest
/// through `base`, keeping what may be kept of the answers and forgetting what unsafe requests
/// change. Requests with conditions of their own (`If-None-Match`, `Range`, …) pass untouched.
package final class CachingTransport: Transport {
    let base: any Transport
    let cache: HTTPCache

    package init(base: any Transport, cache: HTTPCache) {
        self.base = base
        self.cache = cache
    }

    package func runIfIdle(_ work: @escaping @Sendable () -> Void) -> Bool { base.runIfIdle(work) }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
    package var taskExecutor: (any TaskExecutor)? { base.taskExecutor }

    package var canPinKeys: Bool { base.canPinKeys }

    package func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
        let urlRequest = request.urlRequest
        let method = (urlRequest.httpMethod ?? "GET").uppercased()
        let requestDate = cache.now
        if CacheRules.isUnsafe(method) {
            return base.send(request, to: CachingReceiver(receiver, cache: cache, request: urlRequest, mode: .invalidate, requestDate: requestDate))
        }
        if let kept = request.cacheLookup?.revalidating {
            // The conditions went in before the request was signed: signed for other credentials
            // than the response was kept for, a 304 must not serve it, and it is forgotten.
            guard HTTPCache.matching(kept, urlRequest) != nil else {
                cache.remove([kept.url])
                return base.send(request, to: CachingReceiver(receiver, cache: cache, request: urlRequest, mode: .store, requestDate: requestDate))
            }
            return base.send(request, to: CachingReceiver(receiver, cache: cache, request: urlRequest, mode: .revalidate(kept), requestDate: requestDate))
        }
        guard method == "GET" || method == "HEAD", !Self.hasOwnConditions(urlRequest) else { return base.send(request, to: receiver) }
        let isHead = method == "HEAD"
        let kept: CachedResponse?
        if let lookup = request.cacheLookup, lookup.key == urlRequest.url.map(CacheKey.of) {
            // Looked up as the request was prepared, for this same URL: not read again. Its Vary
            // fields are matched against the request as signed.
            kept = HTTPCache.matching(lookup.stored, urlRequest)
        } else {
            kept = cache.response(for: urlRequest)
        }
        switch CacheRules.decide(CacheRules.Request(urlRequest), kept: kept, now: requestDate) {
        case .fresh(let kept):
            return CachedAnswer.send(kept, outcome: .hit, age: kept.age(at: requestDate), bodyless: isHead, to: receiver)
        case .stale(let kept):
            return CachedAnswer.send(kept, outcome: .stale, age: kept.age(at: requestDate), bodyless: isHead, to: receiver)
        case .unsatisfiable:
            return CachedAnswer.send(CachedAnswer.gatewayTimeout(for: urlRequest, at: requestDate), outcome: .miss, age: nil, bodyless: isHead, to: receiver)
        case .revalidate, .network:
            let mode: CacheExchange.Mode = isHead ? .freshen(kept) : .store
            return base.send(request, to: CachingReceiver(receiver, cache: cache, request: urlRequest, mode: mode, requestDate: requestDate))
        }
    }

    /// Whether the request carries conditions or a range of its own, which the cache leaves to
    /// the server and to its caller.
    static func hasOwnConditions(_ request: URLRequest) -> Bool {
        ["If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range"].contains {
            request.value(forHTTPHeaderField: $0) != nil
        }
    }
}

extension HTTPCache {
    /// Adds to `request` the conditions that ask the server whether what is kept for it is
    /// still good, when that is what the cache would do: before the request is signed, so that
    /// the signature covers them.
    package func prepareRevalidation(of request: inout TransportRequest) {
        let urlRequest = request.urlRequest
        guard (urlRequest.httpMethod ?? "GET").uppercased() == "GET", !CachingTransport.hasOwnConditions(urlRequest),
              let url = urlRequest.url else { return }
        let key = CacheKey.of(url)
        let stored = stored(for: key)
        request.cacheLookup = CacheLookup(key: key, stored: stored)
        guard case .revalidate(let kept) = CacheRules.decide(CacheRules.Request(urlRequest), kept: Self.matching(stored, urlRequest, comparingCredentials: false),
                                                             now: now) else { return }
        // A value that could end the field (a file changed on disk) is never sent.
        let safe = { (value: String) in !value.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F } }
        let tag = kept.header("etag").flatMap { safe($0) ? $0 : nil }
        let modified = kept.header("last-modified").flatMap { safe($0) ? $0 : nil }
        guard tag != nil || modified != nil else { return }
        if let tag { request.urlRequest.setValue(tag, forHTTPHeaderField: "If-None-Match") }
        if let modified { request.urlRequest.setValue(modified, forHTTPHeaderField: "If-Modified-Since") }
        request.cacheLookup?.revalidating = kept
    }
}
