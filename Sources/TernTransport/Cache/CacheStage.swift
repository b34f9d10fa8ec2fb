import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The pipeline's cache stage: answers a request from an ``HTTPCache`` where RFC 9111 lets it,
/// and sends the rest through the API's transport, keeping what may be kept of the answers and
/// forgetting what unsafe requests change. Requests with conditions of their own
/// (`If-None-Match`, `Range`, …) pass untouched, and streams and requests with a body are
/// neither answered nor kept.
///
/// The pipeline asks it twice: before a request is signed, to add the conditions that
/// revalidate what is kept (``prepareRevalidation(of:)``), and to send the signed request with
/// what that lookup found.
package struct CacheStage: Sendable {
    let cache: HTTPCache
    /// Whose word the transport's answers carry, when not the system's authorities': part of
    /// the trust a response is kept under.
    private let authorities: String?
    /// The transport, when it may add credentials of its own below the pipeline.
    private let addingCredentials: (any KeyPinningTransport)?

    /// The stage of `cache`, for requests sent through `transport`.
    package init(cache: HTTPCache, transport: any Transport) {
        self.cache = cache
        authorities = Self.trustMark(of: transport)
        addingCredentials = transport as? any KeyPinningTransport
    }

    /// Sends `request`, prepared with `lookup`, through `transport`, or answers it from the
    /// cache; either way `receiver` hears the exchange.
    package func send(_ request: TransportRequest, lookup: CacheLookup?, through transport: any Transport,
                      to receiver: any TransportReceiver) -> any TransportTask {
        let urlRequest = request.urlRequest
        let method = (urlRequest.httpMethod ?? "GET").uppercased()
        let requestDate = cache.now
        let trust = trust(of: request)
        @Sendable func network(_ request: TransportRequest, _ mode: CacheExchange.Mode) -> any TransportTask {
            send(request, mode, trust: trust, requestDate: requestDate, through: transport, to: receiver)
        }
        if CacheRules.isUnsafe(method) { return network(request, .invalidate) }
        // A stream's body has no end to keep, and it must reach the server; only what it
        // changes (above) is the cache's business. A `GET` with a body of its own (as search
        // APIs take them) asks what its URL alone does not say: neither answered nor kept.
        if request.isStream || Self.hasBody(request) { return network(request, .pass) }
        if let lookup, let kept = lookup.revalidating {
            var withoutConditions = request
            for name in Self.conditions { withoutConditions.urlRequest.setValue(nil, forHTTPHeaderField: name) }
            let unconditional = withoutConditions
            // Sent elsewhere than it was looked up for (an adapter or the delegate changed its
            // URL): the conditions are another URL's response's, whose 304 would have answered
            // for this one, and refreshed it. It goes as a request the cache did not prepare.
            if lookup.key != urlRequest.url.map(CacheKey.of) {
                return sendUnprepared(unconditional, lookup: nil, method: method, requestDate: requestDate, trust: trust, through: transport, to: receiver)
            }
            // The conditions went in before the request was signed and pinned: sent with other
            // credentials or another trust than the response was kept under, a 304 could not
            // serve it, so the request goes without them, and what was kept is forgotten.
            guard HTTPCache.matching(kept, urlRequest, trust: trust) != nil else {
                cache.remove([kept.url])
                return network(unconditional, .store)
            }
            // A 304 for another response than the kept one goes no further: the request goes
            // again without the conditions, through the same task. Held weakly: the task holds
            // the exchange, which holds this receiver, and a strong hold kept the three, the
            // request, its API and the transport alive for good. The pipeline holds the task
            // while the request waits for its answer; once it has let go, nobody waits.
            let task = ReplaceableTask()
            let revalidating = CachingReceiver(receiver, cache: cache, request: urlRequest, trust: trust, mode: .revalidate(kept), requestDate: requestDate) {
                [weak task] in task?.replace { network(unconditional, .store) }
            }
            task.begin(transport.send(request, to: revalidating))
            return task
        }
        return sendUnprepared(request, lookup: lookup, method: method, requestDate: requestDate, trust: trust, through: transport, to: receiver)
    }

    /// Sends `request`, which the cache did not prepare to revalidate: answered from what is
    /// kept for it, or sent on.
    private func sendUnprepared(_ request: TransportRequest, lookup: CacheLookup?, method: String, requestDate: Date, trust: String?,
                                through transport: any Transport, to receiver: any TransportReceiver) -> any TransportTask {
        let urlRequest = request.urlRequest
        guard method == "GET" || method == "HEAD", !Self.hasOwnConditions(urlRequest) else {
            return send(request, .pass, trust: trust, requestDate: requestDate, through: transport, to: receiver)
        }
        let isHead = method == "HEAD"
        let kept: CachedResponse?
        if let lookup, lookup.key == urlRequest.url.map(CacheKey.of) {
            // Looked up as the request was prepared, for this same URL: not read again. Its Vary
            // fields are matched against the request as signed.
            kept = HTTPCache.matching(lookup.stored, urlRequest, trust: trust)
        } else {
            kept = cache.response(for: urlRequest, trust: trust)
        }
        switch CacheRules.decide(CacheRules.Request(urlRequest), kept: kept, now: requestDate) {
        case .fresh(let kept):
            return CachedAnswer.send(kept, for: urlRequest.url, outcome: .hit, age: kept.age(at: requestDate), bodyless: isHead, to: receiver)
        case .stale(let kept):
            return CachedAnswer.send(kept, for: urlRequest.url, outcome: .stale, age: kept.age(at: requestDate), bodyless: isHead, to: receiver)
        case .unsatisfiable:
            return CachedAnswer.send(CachedAnswer.gatewayTimeout(for: urlRequest, at: requestDate), for: urlRequest.url, outcome: .miss, age: nil, bodyless: isHead, to: receiver)
        case .revalidate, .network:
            return send(request, isHead ? .freshen(kept) : .store, trust: trust, requestDate: requestDate, through: transport, to: receiver)
        }
    }

    /// Sends `request` to the server, the cache hearing its exchange as `mode` says; or, when
    /// the request wants only what is kept (`only-if-cached`), answers it with a 504 instead.
    /// Every request the cache does not answer comes here, those it passes through untouched
    /// (unsafe, with a body, a stream, with a range of its own) too: none of them reaches the
    /// network offline.
    private func send(_ request: TransportRequest, _ mode: CacheExchange.Mode, trust: String?, requestDate: Date,
                      through transport: any Transport, to receiver: any TransportReceiver) -> any TransportTask {
        let urlRequest = request.urlRequest
        guard !Self.wantsOnlyKept(urlRequest) else {
            let bodyless = (urlRequest.httpMethod ?? "GET").caseInsensitiveEquals("HEAD")
            return CachedAnswer.send(CachedAnswer.gatewayTimeout(for: urlRequest, at: requestDate), for: urlRequest.url, outcome: .miss, age: nil, bodyless: bodyless, to: receiver)
        }
        return transport.send(request, to: CachingReceiver(receiver, cache: cache, request: urlRequest, trust: trust, mode: mode, requestDate: requestDate))
    }

    /// What the request trusts, when not the default: the keys its host is pinned to, the
    /// authorities the transport trusts instead of the system's, and the values of the API's own
    /// credential headers (``TransportRequest/credentialHeaders``) and of those the transport
    /// adds itself, as if the response said `Vary` on them, so that one account's answer is
    /// never another's. A response is served
    /// only to requests sent under the same trust as the one that fetched it; the cache keeps a
    /// digest of it.
    private func trust(of request: TransportRequest) -> String? {
        let pins = request.pinnedKeys.isEmpty ? nil : "pins:" + request.pinnedKeys.sorted().joined(separator: ",")
        let names = Set(request.credentialHeaders.map { $0.lowercased() }).subtracting(HTTPCache.credentials).sorted()
        let sent = names.compactMap { name in request.urlRequest.value(forHTTPHeaderField: name).map { name + ": " + $0 } }
        let credentials = sent.isEmpty ? nil : "credentials:" + sent.joined(separator: "\n")
        let added = addingCredentials?.credentialsItAdds(to: request).map { "added:" + $0 }
        let parts = [pins, authorities, credentials, added].compactMap { $0 }
        return parts.isEmpty ? nil : parts.joined(separator: ";")
    }

    /// Whose word `transport`'s answers carry: `nil` for the system's authorities. A transport
    /// of the app's may wrap one that trusts others, or answer with no server at all: its
    /// answers are its type's alone.
    package static func trustMark(of transport: any Transport) -> String? {
        guard let known = transport as? any KeyPinningTransport else { return "transport:" + String(reflecting: type(of: transport)) }
        return known.trustMark
    }

    /// Whether `request` wants only what is kept (`only-if-cached`, `.returnCacheDataDontLoad`):
    /// nothing of it may reach the network.
    package static func wantsOnlyKept(_ request: URLRequest) -> Bool {
        CacheRules.Request(request).onlyIfCached
    }

    /// The conditions the cache adds to a request to revalidate what it keeps.
    static let conditions = ["If-None-Match", "If-Modified-Since"]

    /// Whether the request has a body: a file, a stream, or bytes.
    static func hasBody(_ request: TransportRequest) -> Bool {
        switch request.body {
        case .inRequest: request.urlRequest.httpBody.map { !$0.isEmpty } ?? false
        case .file, .stream: true
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

extension CacheStage {
    /// Adds to `request` the conditions that ask the server whether what is kept for it is
    /// still good, when that is what the cache would do: before the request is signed, so that
    /// the signature covers them. Returns what it found, for ``send(_:lookup:through:to:)``; a
    /// stream's request is left alone, and finds nothing.
    package func prepareRevalidation(of request: inout TransportRequest) -> CacheLookup? {
        let urlRequest = request.urlRequest
        guard !request.isStream, !Self.hasBody(request), (urlRequest.httpMethod ?? "GET").uppercased() == "GET", !Self.hasOwnConditions(urlRequest),
              let url = urlRequest.url else { return nil }
        let key = CacheKey.of(url)
        let stored = cache.stored(for: key)
        var lookup = CacheLookup(key: key, stored: stored)
        guard case .revalidate(let kept) = CacheRules.decide(CacheRules.Request(urlRequest), kept: HTTPCache.matching(stored, urlRequest, trust: nil, comparingCredentials: false),
                                                             now: cache.now) else { return lookup }
        // A value that could end the field (a file changed on disk) is never sent.
        let safe = { (value: String) in !value.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F } }
        let tag = kept.header("etag").flatMap { safe($0) ? $0 : nil }
        let modified = kept.header("last-modified").flatMap { safe($0) ? $0 : nil }
        guard tag != nil || modified != nil else { return lookup }
        if let tag { request.urlRequest.setValue(tag, forHTTPHeaderField: Self.conditions[0]) }
        if let modified { request.urlRequest.setValue(modified, forHTTPHeaderField: Self.conditions[1]) }
        lookup.revalidating = kept
        return lookup
    }
}
