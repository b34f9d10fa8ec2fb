import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Hears an exchange on its way to the pipeline's receiver, for the cache: each event goes
/// through a ``CacheExchange``, and this carries out what it says (hand the event on or not,
/// change what the cache keeps, answer with a kept response).
final class CachingReceiver: TransportReceiver {
    private let receiver: any TransportReceiver
    private let cache: HTTPCache
    private let exchange: Locked<CacheExchange>
    /// Sends the request again without the cache's conditions, to this receiver's receiver.
    private let resend: (@Sendable () -> Void)?
    /// The request's URL, which a kept answer it revalidated comes from.
    private let url: URL?

    init(_ receiver: any TransportReceiver, cache: HTTPCache, request: URLRequest, trust: String?, mode: CacheExchange.Mode, requestDate: Date,
         resend: (@Sendable () -> Void)? = nil) {
        self.receiver = receiver
        self.cache = cache
        self.resend = resend
        url = request.url
        exchange = Locked(CacheExchange(mode: mode, request: request, trust: trust, requestDate: requestDate,
                                        maximumBodyBytes: cache.maximumResponseBytes))
    }

    func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {
        receiver.didSendBodyData(totalSent, of: totalExpected)
    }

    func didReceive(_ head: ResponseHead) -> TransferDecision {
        let now = cache.now
        let fields = Self.fields(of: head)
        let cookies = head.headers["Set-Cookie"].map { CacheExchange.Cookies(joined: $0, fields: head.setCookies) }
        let (handOn, change) = exchange.withLock {
            $0.head(status: head.statusCode, fields: fields, cookies: cookies, announcedLength: head.contentLength ?? -1, at: now)
        }
        apply(change)
        guard handOn else { return .proceed }
        if let word = exchange.withLock({ $0.wordBeforeHead() }) { receiver.didCollect(word) }
        let decision = receiver.didReceive(head)
        exchange.withLock { $0.pipelineDecided(decision) }
        return decision
    }

    func didReceive(_ chunk: Data) -> TransferDecision {
        guard exchange.withLock({ $0.chunk(chunk) }) else { return .proceed }
        let decision = receiver.didReceive(chunk)
        exchange.withLock { $0.pipelineDecided(decision) }
        return decision
    }

    func didCollect(_ metrics: TransferMetrics) {
        if let metrics = exchange.withLock({ $0.metrics(metrics) }) { receiver.didCollect(metrics) }
    }

    func didComplete(with error: (any Error)?) {
        let now = cache.now
        let (change, ending) = exchange.withLock { $0.end(error: error, at: now) }
        apply(change)
        switch ending {
        case .asItCame(let metrics):
            if let metrics { receiver.didCollect(metrics) }
            receiver.didComplete(with: error)
        case .kept(let kept, let cookies, let metrics):
            CachedAnswer.deliver(kept, for: url, age: kept.age(at: now), bodyless: false, metrics: metrics, cookies: cookies, to: receiver)
        case .resend(let earlier):
            guard let resend else { return receiver.didComplete(with: URLError(.badServerResponse)) }
            // The request may have ended before its task was handed over: nothing would cancel
            // the exchange sent for it until then.
            guard (receiver as? any EarlierExchangeReceiver)?.didEndEarlierExchange(earlier) ?? true else { return }
            resend()
        }
    }

    private func apply(_ change: CacheExchange.Change?) {
        switch change {
        case .keep(let response)?: cache.store(response)
        case .update(let original, let response)?: cache.update(original, to: response)
        case .forget(let keys)?: cache.remove(keys)
        case nil: break
        }
    }

    /// A head's fields, names in lower case, without those that describe only this message. A
    /// body its transport handed over still coded keeps its `Content-Encoding`: kept without
    /// it, the coded bytes would be served as the document.
    static func fields(of head: ResponseHead) -> [String: String] {
        var fields: [String: String] = [:]
        for field in head.headers {
            let name = field.name.lowercased()
            guard !CachedResponse.framing.contains(name) || name == "content-encoding" && isStillCoded(field.value) else { continue }
            fields[name] = fields[name].map { $0 + ", " + field.value } ?? field.value
        }
        return fields
    }

    /// Whether a body of this `Content-Encoding` comes from its transport as it was sent: it
    /// names a coding the transport cannot undo, which a request gets only by naming it in its
    /// own `Accept-Encoding`.
    static func isStillCoded(_ contentEncoding: String) -> Bool {
        contentEncoding.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.contains { coding in
            guard !coding.isEmpty, coding != "identity" else { return false }
            #if os(Linux)
            return ContentDecoder.Family(coding).map { !$0.isAvailable } ?? true
            #else
            return !["gzip", "x-gzip", "deflate", "br"].contains(coding)
            #endif
        }
    }
}
