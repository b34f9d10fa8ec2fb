import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Hears an exchange on its way to the pipeline's receiver, for the cache: keeps the response
/// if it may be kept, answers a `304` with the response it revalidated, refreshes a kept `GET`
/// from a `HEAD`, or forgets what an unsafe request changed.
final class CachingReceiver: TransportReceiver {
    /// What the exchange is to the cache.
    enum Mode {
        /// A `GET` the server answers: kept if it may be.
        case store
        /// A `GET` asking whether `kept` is still good.
        case revalidate(CachedResponse)
        /// A `HEAD`: a `200` with the same validators refreshes the kept `GET` (RFC 9111, §4.3.5).
        case freshen(CachedResponse?)
        /// An unsafe request: on success, the URLs it touched are forgotten.
        case invalidate
    }

    private struct State {
        /// What to keep, while it still may be kept.
        var candidate: CachedResponse?
        /// The `304` that revalidated, its fields and the metrics that came with it.
        var notModified: [String: String]?
        /// The `Set-Cookie` the `304` brought: handed on, never kept.
        var notModifiedCookies: String?
        var metrics: TransferMetrics?
        var responseDate = Date.distantPast
        /// The status that came, and whether the transport reported metrics (stubs and
        /// URLSession on Linux do not: then the cache reports its outcome alone).
        var status: Int?
        var sawMetrics = false
    }

    private let receiver: any TransportReceiver
    private let cache: HTTPCache
    private let request: URLRequest
    private let mode: Mode
    private let requestDate: Date
    private let state = Locked(State())

    init(_ receiver: any TransportReceiver, cache: HTTPCache, request: URLRequest, mode: Mode, requestDate: Date) {
        self.receiver = receiver
        self.cache = cache
        self.request = request
        self.mode = mode
        self.requestDate = requestDate
    }

    func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {
        receiver.didSendBodyData(totalSent, of: totalExpected)
    }

    func didReceive(_ response: HTTPURLResponse) -> TransferDecision {
        let now = cache.now
        let headers = Self.fields(of: response)
        state.withLock { $0.status = response.statusCode }
        switch mode {
        case .revalidate(let kept) where response.statusCode == 304 && !Self.namesOther(headers, than: kept.headers):
            let cookies = response.value(forHTTPHeaderField: "Set-Cookie")
            state.withLock { $0.notModified = headers; $0.notModifiedCookies = cookies; $0.responseDate = now }
            return .proceed
        case .store, .revalidate:
            let candidate = CachedResponse(url: CacheKey.of(request.url ?? response.url ?? URL(fileURLWithPath: "/")), status: response.statusCode,
                                           headers: headers, body: Data(), requestDate: requestDate, responseDate: now,
                                           varying: HTTPCache.varying(CachedResponse.varyNames(headers["vary"]), of: request))
            let announced = response.expectedContentLength
            let mayStore = CacheRules.mayStore(candidate, for: request, control: CacheRules.Request(request).control)
                && announced <= Int64(cache.maximumResponseBytes)
            state.withLock { $0.candidate = mayStore ? candidate : nil; $0.responseDate = now }
        case .freshen(let kept?) where response.statusCode == 200 && Self.sameValidators(headers, kept.headers):
            var refreshed = kept
            refreshed.update(with: headers, requestDate: requestDate, responseDate: now)
            cache.store(refreshed)
        case .invalidate where (200..<400).contains(response.statusCode):
            if let url = request.url { cache.remove(CacheRules.invalidated(by: url, headers: headers)) }
        case .freshen, .invalidate:
            break
        }
        let decision = receiver.didReceive(response)
        if decision == .stop { state.withLock { $0.candidate = nil } }
        return decision
    }

    func didReceive(_ chunk: Data) -> TransferDecision {
        let revalidated = state.withLock { state -> Bool in
            guard state.notModified == nil else { return true }
            if state.candidate != nil {
                if (state.candidate?.body.count ?? 0) + chunk.count > cache.maximumResponseBytes {
                    state.candidate = nil
                } else {
                    state.candidate?.body.append(chunk)
                }
            }
            return false
        }
        // A 304 has no body; whatever a server sends with one is not the kept response's.
        guard !revalidated else { return .proceed }
        let decision = receiver.didReceive(chunk)
        if decision == .stop { state.withLock { $0.candidate = nil } }
        return decision
    }

    func didCollect(_ metrics: TransferMetrics) {
        var metrics = metrics
        let revalidated = state.withLock { state -> Bool in
            state.sawMetrics = true
            guard state.notModified != nil else { return false }
            state.metrics = metrics
            return true
        }
        guard !revalidated else { return }
        metrics.cacheOutcome = outcome
        receiver.didCollect(metrics)
    }

    /// What the cache did, when the server answered: nothing for an unsafe request.
    private var outcome: CacheOutcome? {
        if case .invalidate = mode { nil } else { .miss }
    }

    func didComplete(with error: (any Error)?) {
        let state = state.withLock { $0 }
        guard case .revalidate(var kept) = mode, let notModified = state.notModified else {
            if error == nil, let candidate = state.candidate { cache.store(candidate) }
            if error == nil, !state.sawMetrics, let outcome {
                receiver.didCollect(TransferMetrics(url: request.url, statusCode: state.status, cacheOutcome: outcome))
            }
            return receiver.didComplete(with: error)
        }
        guard error == nil else { return receiver.didComplete(with: error) }
        kept.update(with: notModified, requestDate: requestDate, responseDate: state.responseDate)
        cache.store(kept)
        var metrics = state.metrics ?? TransferMetrics(url: request.url, statusCode: 304)
        metrics.cacheOutcome = .revalidated
        CachedAnswer.deliver(kept, age: kept.age(at: cache.now), bodyless: false, metrics: metrics,
                             adding: state.notModifiedCookies.map { ["set-cookie": $0] } ?? [:], to: receiver)
    }

    /// A head's fields, names in lower case, without those that describe only this message.
    static func fields(of response: HTTPURLResponse) -> [String: String] {
        var fields: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            guard let name = (name as? String)?.lowercased(), let value = value as? String, !CachedResponse.framing.contains(name) else { continue }
            fields[name] = fields[name].map { $0 + ", " + value } ?? value
        }
        return fields
    }

    /// Whether a `304` confirms another response than the kept one: its `ETag` is not the kept
    /// one's (RFC 9111, §4.3.4). Such a `304` goes to the caller as it is.
    static func namesOther(_ notModified: [String: String], than kept: [String: String]) -> Bool {
        guard let tag = notModified["etag"] else { return false }
        let strip = { (tag: String) in tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag }
        return kept["etag"].map { strip($0) != strip(tag) } ?? true
    }

    /// Whether a `HEAD`'s validators are those of the kept response: a strong `ETag` alike, or
    /// else the same `Last-Modified`.
    static func sameValidators(_ head: [String: String], _ kept: [String: String]) -> Bool {
        if let tag = head["etag"], let keptTag = kept["etag"] { return tag == keptTag && !tag.hasPrefix("W/") }
        if let modified = head["last-modified"] { return modified == kept["last-modified"] }
        return false
    }
}
