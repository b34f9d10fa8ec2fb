import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the cache makes of one exchange with the server, as a value: each event of the exchange
/// goes in, and what to do comes out (hand it on or not, keep or forget responses, answer with a
/// kept one). ``CachingReceiver`` carries the actions out.
struct CacheExchange {
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
        /// A request the cache leaves to the server (a body, a stream, conditions of its own):
        /// nothing kept, nothing forgotten, its answer said to be a ``CacheOutcome/miss``.
        case pass
    }

    /// A change to what the cache keeps.
    enum Change: Equatable {
        case keep(CachedResponse)
        /// Keep the second, the first as this exchange updated it, if the first is still kept.
        case update(CachedResponse, to: CachedResponse)
        case forget([String])
    }

    /// How the exchange ends for the pipeline.
    enum Ending {
        /// As the server ended it: `metrics` first (the cache's word, when the transport gave
        /// none), then the end.
        case asItCame(metrics: TransferMetrics?)
        /// With the kept response, refreshed by a `304`: its head (with the `304`'s `cookies`),
        /// body, `metrics`, end.
        case kept(CachedResponse, cookies: Cookies?, metrics: TransferMetrics)
        /// Not at all: the server confirmed another response than the one the cache asked
        /// about, and the request goes again, without the cache's conditions, for the pipeline
        /// never to see a `304` it did not ask for; `earlier`, that exchange's metrics.
        case resend(earlier: TransferMetrics?)
    }

    /// A `304`'s `Set-Cookie` fields, handed on with the kept response and never kept: joined, as
    /// its headers hold them, and each on its own when the transport read them so (see
    /// `ResponseHead.setCookies`).
    struct Cookies: Equatable {
        let joined: String
        let fields: [String]?
    }

    private let mode: Mode
    private let request: URLRequest
    /// What the request trusts, when not the default (see ``HTTPCache/varying(_:of:trust:)``).
    private let trust: String?
    private let requestDate: Date
    private let maximumBodyBytes: Int
    /// What to keep, while it still may be kept.
    private var candidate: CachedResponse?
    /// The `304` that revalidated: its fields, its cookies (handed on, never kept), when it came,
    /// and the metrics that came with it.
    private var notModified: (fields: [String: String], cookies: Cookies?, date: Date)?
    private var heldMetrics: TransferMetrics?
    /// Whether the server answered the cache's conditions with a `304` for another response.
    private var confirmedOther = false
    private var status: Int?
    private var sawMetrics = false

    init(mode: Mode, request: URLRequest, trust: String? = nil, requestDate: Date, maximumBodyBytes: Int) {
        self.mode = mode
        self.request = request
        self.trust = trust
        self.requestDate = requestDate
        self.maximumBodyBytes = maximumBodyBytes
    }

    /// A head came at `now`; whether to hand it on, and what to change in the cache.
    mutating func head(status: Int, fields: [String: String], cookies: Cookies?, announcedLength: Int64, at now: Date) -> (handOn: Bool, change: Change?) {
        self.status = status
        switch mode {
        case .revalidate(let kept) where status == 304:
            guard !Self.validatorsDiffer(fields, kept.headers) else {
                confirmedOther = true
                return (false, .forget([kept.url]))
            }
            notModified = (fields, cookies, now)
            return (false, nil)
        case .store, .revalidate:
            // A cache with a clock dates a response that came without a date (RFC 9110, §6.6.1).
            var kept = fields
            if kept["date"] == nil { kept["date"] = HTTPDate.format(now) }
            let response = CachedResponse(url: request.url.map(CacheKey.of) ?? "", status: status, headers: kept, body: Data(),
                                          requestDate: requestDate, responseDate: now,
                                          varying: HTTPCache.varying(CachedResponse.varyNames(fields["vary"]), of: request, trust: trust))
            let mayStore = CacheRules.mayStore(response, for: request)
                && announcedLength <= Int64(maximumBodyBytes)
            candidate = mayStore ? response : nil
            return (true, nil)
        case .freshen(let kept?) where status == 200 && Self.sameValidators(fields, kept.headers)
                                    && !Self.lengthDiffers(announcedLength, kept):
            var refreshed = kept
            refreshed.update(with: fields, requestDate: requestDate, responseDate: now)
            refreshed.varying = varyingOfThisRequest(refreshed)
            // Freshened into something that may not be kept (it says `no-store`, or another
            // `Vary`): forgotten.
            let mayKeep = CacheRules.mayKeep(refreshed, credentialed: CacheRules.hasCredentials(request)) && !Self.changesVary(fields, of: kept)
            return (true, mayKeep ? .update(kept, to: refreshed) : .forget([kept.url]))
        case .freshen(let kept?) where status == 200 && (Self.validatorsDiffer(fields, kept.headers) || Self.lengthDiffers(announcedLength, kept)):
            // Validators of another response, or another length (a document changed within the
            // second its `Last-Modified` names): the kept one is no longer what the server has
            // (§4.3.5 asks to take it as stale; it is forgotten, having nothing left to revalidate).
            // A kept body stored decoded (gzip) is longer than the length its HEAD states: that
            // one is forgotten too, as it cannot be told apart.
            return (true, .forget([kept.url]))
        case .invalidate where (200..<400).contains(status):
            return (true, request.url.map { .forget(CacheRules.invalidated(by: $0, headers: fields)) })
        case .freshen, .invalidate, .pass:
            return (true, nil)
        }
    }

    /// A chunk of body came; whether to hand it on (a `304`'s is not the kept response's).
    mutating func chunk(_ data: Data) -> Bool {
        guard notModified == nil, !confirmedOther else { return false }
        if let kept = candidate?.body.count {
            if kept + data.count > maximumBodyBytes { candidate = nil } else { candidate?.body.append(data) }
        }
        return true
    }

    /// What the pipeline decided: a stop leaves the body partial, and nothing is kept.
    mutating func pipelineDecided(_ decision: TransferDecision) {
        if decision == .stop { candidate = nil }
    }

    /// The transport's metrics: to hand on now, with the cache's word, or `nil` to hold them for
    /// the kept answer, or for the request sent again after a `304` for another response.
    mutating func metrics(_ metrics: TransferMetrics) -> TransferMetrics? {
        sawMetrics = true
        var metrics = metrics
        metrics.cacheOutcome = .miss
        guard notModified == nil, !confirmedOther else {
            heldMetrics = metrics
            return nil
        }
        return metrics
    }

    /// The cache's word to hand on before a head the transport said nothing of yet, for a
    /// request the cache leaves to the server (a `POST` too): a stream's head settles the
    /// request before its end (the end's report replaces it). Other answers settle at their
    /// end, which says it then.
    func wordBeforeHead() -> TransferMetrics? {
        switch mode {
        case .pass, .invalidate: ownWord
        case .store, .revalidate, .freshen: nil
        }
    }

    /// The exchange ended, with `error` if it failed, at `now`: what to change in the cache, and
    /// how the pipeline hears the end.
    func end(error: (any Error)?, at now: Date) -> (change: Change?, ending: Ending) {
        // A failed exchange whose head was handed on says the cache's word too: a stream's end
        // reports it.
        guard error == nil else { return (nil, .asItCame(metrics: status == nil ? nil : ownWord)) }
        if confirmedOther { return (nil, .resend(earlier: heldMetrics)) }
        if case .revalidate(let original) = mode, let notModified {
            var kept = original
            kept.update(with: notModified.fields, requestDate: requestDate, responseDate: notModified.date)
            kept.varying = varyingOfThisRequest(kept)
            var metrics = heldMetrics ?? TransferMetrics(url: request.url, statusCode: 304)
            metrics.cacheOutcome = .revalidated
            // Updated by a 304 that says `no-store`, or another `Vary` (or anything else that forbids keeping it),
            // it answers this request and is forgotten: kept, its old `Last-Modified` made it
            // fresh by heuristic, and the server was asked no more.
            let mayKeep = CacheRules.mayStore(kept, for: request) && !Self.changesVary(notModified.fields, of: original)
            return (mayKeep ? .update(original, to: kept) : .forget([kept.url]), .kept(kept, cookies: notModified.cookies, metrics: metrics))
        }
        return (candidate.map(Change.keep), .asItCame(metrics: ownWord))
    }

    /// The cache's own word on the exchange, when the transport told nothing of it.
    private var ownWord: TransferMetrics? {
        sawMetrics ? nil : TransferMetrics(url: request.url, statusCode: status, cacheOutcome: .miss)
    }

    /// Whom `kept`, once this request's answer has updated its head, is kept for: this request,
    /// as if it had fetched it whole. The server told its fields to whoever asked: a response
    /// kept for anyone and revalidated by a request signed in to an account carries what the
    /// server said to that account (its `private`, its `Link`), and answers it alone from then on.
    private func varyingOfThisRequest(_ kept: CachedResponse) -> [String: String] {
        HTTPCache.varying(kept.varyNames, of: request, trust: trust)
    }

    /// Whether an answer's `ETag` is not the kept one's, even compared weakly.
    private static func namesOther(_ notModified: [String: String], than kept: [String: String]) -> Bool {
        guard let tag = notModified["etag"] else { return false }
        let strip = { (tag: String) in tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag }
        return kept["etag"].map { strip($0) != strip(tag) } ?? true
    }

    /// Whether an answer's fields name other `Vary` fields than `kept`'s: its body is the one
    /// the kept `Vary` chose, which the answer's (a proxy's, answering for the origin) no longer
    /// says, so it is kept under neither.
    static func changesVary(_ fields: [String: String], of kept: CachedResponse) -> Bool {
        fields["vary"].map { Set(CachedResponse.varyNames($0)) != Set(kept.varyNames) } ?? false
    }

    /// Whether a `304`'s or a `HEAD`'s validators say the server has another response than the
    /// kept one: an `ETag` not the kept one's, even compared weakly, or else another
    /// `Last-Modified` (RFC 9111, §4.3.4). Such a `304` updates nothing, and the request goes again.
    static func validatorsDiffer(_ head: [String: String], _ kept: [String: String]) -> Bool {
        if head["etag"] != nil { return namesOther(head, than: kept) }
        return head["last-modified"].map { $0 != kept["last-modified"] } ?? false
    }

    /// Whether a `HEAD` states a length (`announced`, -1 for none) other than the kept body's.
    private static func lengthDiffers(_ announced: Int64, _ kept: CachedResponse) -> Bool {
        announced >= 0 && announced != Int64(kept.body.count)
    }

    /// Whether a `HEAD`'s validators are those of the kept response: a strong `ETag` alike, or
    /// else the same `Last-Modified`.
    static func sameValidators(_ head: [String: String], _ kept: [String: String]) -> Bool {
        if let tag = head["etag"], let keptTag = kept["etag"] { return tag == keptTag && !tag.hasPrefix("W/") }
        if let modified = head["last-modified"] { return modified == kept["last-modified"] }
        return false
    }
}
