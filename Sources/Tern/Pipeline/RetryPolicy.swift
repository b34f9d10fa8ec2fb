import Foundation

/// When and how soon a failed request is sent again.
///
/// The default: at most 2 retries; only idempotent methods (GET, HEAD, PUT, DELETE, OPTIONS,
/// TRACE); only for 408, 429, 500, 502, 503, 504 and for transient `URLError`s (timed out,
/// connection lost, an empty reply, cannot connect, DNS failure, not connected); exponential
/// backoff from 0.5 s (0.5 s, then 1 s) with full jitter; a `Retry-After` header wins, and one
/// asking for longer than `maxDelay` is not retried: the request fails with its answer, never
/// sent before the server allows.
///
/// ```swift
/// APIConfiguration(retryPolicy: RetryPolicy(maxRetries: 4, baseDelay: 0.2))
/// RequestOptions(retryPolicy: .never)
/// ```
public struct RetryPolicy: Sendable {
    /// How many times a request may be sent again after its first attempt.
    package var maxRetries: Int
    /// The backoff before the first retry; it doubles for each one after.
    package var baseDelay: TimeInterval
    /// The longest wait: the backoff's cap, and the longest `Retry-After` waited for.
    package var maxDelay: TimeInterval
    /// The methods that may be retried.
    package var methods: Set<HTTPMethod>
    /// The statuses that may be retried.
    package var statusCodes: Set<Int>
    /// The transport errors that may be retried.
    package var urlErrorCodes: Set<URLError.Code>
    /// Whether to wait a random time up to the backoff (full jitter) rather than the backoff itself.
    package var jitter: Bool

    /// Creates a policy; every default is the one described above.
    public init(
        maxRetries: Int = 2,
        baseDelay: TimeInterval = 0.5,
        maxDelay: TimeInterval = 30,
        methods: Set<HTTPMethod> = HTTPMethod.idempotent,
        statusCodes: Set<Int> = [408, 429, 500, 502, 503, 504],
        // A server that hangs up as a request arrives is "connection lost" on Apple platforms and
        // "bad server response" (libcurl's empty reply) on Linux.
        urlErrorCodes: Set<URLError.Code> = [.timedOut, .networkConnectionLost, .badServerResponse, .cannotConnectToHost,
                                              .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet],
        jitter: Bool = true
    ) {
        self.maxRetries = maxRetries
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.methods = methods
        self.statusCodes = statusCodes
        self.urlErrorCodes = urlErrorCodes
        self.jitter = jitter
    }

    /// No retries at all.
    public static let never = RetryPolicy(maxRetries: 0)

    /// Whether the attempt numbered `retriesSoFar` (0 for the first), which failed with `status`
    /// or `error`, may be retried.
    func allowsRetry(method: HTTPMethod, retriesSoFar: Int, status: Int? = nil, error: (any Error)? = nil) -> Bool {
        guard retriesSoFar < maxRetries, methods.contains(method) else { return false }
        if let status { return statusCodes.contains(status) }
        if let code = (error as? URLError)?.code { return urlErrorCodes.contains(code) }
        return false
    }

    /// Whether the policy waits as long as a `Retry-After` of `seconds` asks: not past
    /// ``maxDelay``, where retrying sooner would only meet the same refusal.
    func waits(_ seconds: TimeInterval) -> Bool {
        seconds <= maxDelay
    }

    /// The wait before retry number `retry` (1 for the first): `Retry-After` if the server sent
    /// one (``waits(_:)``), else the exponential backoff, with full jitter when enabled; never
    /// over ``maxDelay``.
    func delay(beforeRetry retry: Int, retryAfter: TimeInterval?, random: (ClosedRange<Double>) -> Double) -> TimeInterval {
        if let retryAfter { return min(max(0, retryAfter), maxDelay) }
        let backoff = min(maxDelay, baseDelay * pow(2, Double(retry - 1)))
        return jitter ? random(0...backoff) : backoff
    }

    /// The seconds a `Retry-After` header asks for: a whole number of seconds, or an HTTP date
    /// (RFC 9110 §10.2.3) in any of its three forms, the obsolete RFC 850 and asctime ones too,
    /// which a recipient must read (§5.6.7): one unread was retried after the backoff, before
    /// the time asked. Anything else (`-1`, `1e9`, `nan`) is ignored.
    static func retryAfter(_ value: String?, now: Date = Date()) -> TimeInterval? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) { return TimeInterval(value) }
        return HTTPDate.parse(value).map { $0.timeIntervalSince(now) }
    }
}
