import Foundation

/// A response as the cache keeps it: its head, its body, when it was asked for and when it
/// came (by the cache's clock), and the request's values of the fields its `Vary` names.
package struct CachedResponse: Codable, Sendable, Equatable {
    /// The URL it answered, as the cache's key reads it.
    var url: String
    var status: Int
    /// Field names in lower case, values as they came (several lines of one name joined by ", ").
    var headers: [String: String]
    var body: Data
    /// When the request that brought it was sent, and when its head came (RFC 9111's
    /// request_time and response_time).
    var requestDate: Date
    var responseDate: Date
    /// The request's value of each field `Vary` names (lower case), "" when it had none.
    var varying: [String: String]

    func header(_ name: String) -> String? { headers[name] }

    var cacheControl: CacheControl { CacheControl(headers["cache-control"].map { [$0] } ?? []) }

    /// The fields `Vary` names, in lower case; `["*"]` for a response that varies on anything.
    var varyNames: [String] { Self.varyNames(headers["vary"]) }

    static func varyNames(_ vary: String?) -> [String] {
        (vary ?? "").split(separator: ",").map { String($0).trimmingSpace().lowercased() }.filter { !$0.isEmpty }
    }

    /// Whether it has a validator to revalidate with.
    var hasValidator: Bool { headers["etag"] != nil || headers["last-modified"] != nil }

    /// How long it stays fresh after it was made (RFC 9111, §4.2.1): `max-age`, else `Expires`
    /// less `Date`, else for a status that allows it a tenth of the time since `Last-Modified`
    /// (at most a day); otherwise zero. An invalid `max-age` or `Expires` means stale.
    var freshnessLifetime: TimeInterval {
        let control = cacheControl
        if control.has("max-age") { return TimeInterval(control.seconds("max-age") ?? 0) }
        if let expires = headers["expires"] {
            guard let expiry = HTTPDate.parse(expires) else { return 0 }
            return max(0, expiry.timeIntervalSince(date))
        }
        guard Self.heuristicallyCacheable.contains(status) || control.has("public"),
              let modified = headers["last-modified"].flatMap(HTTPDate.parse) else { return 0 }
        return min(max(0, date.timeIntervalSince(modified)) / 10, 24 * 3600)
    }

    /// The `Date` the server gave it, else when it came.
    var date: Date { headers["date"].flatMap(HTTPDate.parse) ?? responseDate }

    /// Its age at `now` (RFC 9111, §4.2.3): the age it came with, corrected for the time the
    /// request took and for a server clock behind, plus the time it has been kept.
    func age(at now: Date) -> TimeInterval {
        let apparentAge = max(0, responseDate.timeIntervalSince(date))
        // Held to 2^31 - 1 however large the server says it is, as §1.2.2 asks: a server's
        // number near Int.max, made a Double, rounded past it and trapped where it was printed.
        let ageValue = headers["age"].flatMap { CacheControl.deltaSeconds($0.trimmingSpace()) }.map(TimeInterval.init) ?? 0
        let correctedAge = ageValue + max(0, responseDate.timeIntervalSince(requestDate))
        return max(apparentAge, correctedAge) + max(0, now.timeIntervalSince(responseDate))
    }

    /// Statuses a cache may keep with no freshness given (RFC 9110, §15.1), 206 aside: this
    /// cache keeps no partial content.
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// The head as a 304 updates it (RFC 9111, §3.2): each field the 304 has replaces the
    /// stored one, but for those that describe the stored body's framing. A 304 without a
    /// `Date` is stamped with when it came, as a stored response is (RFC 9110, §6.6.1): the old
    /// `Date` would leave the response as old as before, stale again at once.
    mutating func update(with notModified: [String: String], requestDate: Date, responseDate: Date) {
        for (name, value) in notModified where !Self.framing.contains(name) { headers[name] = value }
        if notModified["date"] == nil { headers["date"] = HTTPDate.format(responseDate) }
        self.requestDate = requestDate
        self.responseDate = responseDate
    }

    /// Fields about a message's own bytes, never taken from another message.
    static let framing: Set<String> = ["content-length", "content-encoding", "transfer-encoding", "content-range", "connection", "keep-alive",
                                       "set-cookie", "trailer", "upgrade", "proxy-connection", "te"]
}
