import Foundation

/// How much extra load retries may add to an API, so that a server that is down is not stormed.
///
/// Within each `window`, retries may number at most `minimumRetries` plus `ratio` times the
/// requests sent: with the defaults, 10 retries plus 20% of the requests.
public struct RetryBudget: Sendable, Equatable {
    /// The share of requests that may be retried.
    package var ratio: Double
    /// Retries always allowed per window, so that a quiet API can still retry.
    package var minimumRetries: Int
    /// Seconds.
    package var window: TimeInterval

    /// Creates a budget.
    public init(ratio: Double = 0.2, minimumRetries: Int = 10, window: TimeInterval = 10) {
        self.ratio = ratio
        self.minimumRetries = minimumRetries
        self.window = window
    }

    /// Retries are never held back.
    public static let unlimited = RetryBudget(ratio: .infinity, minimumRetries: .max)
}

/// The budget's account for one API: requests and retries in the current window.
final class RetryAccount: Sendable {
    private struct Counts {
        var windowStart: TimeInterval = 0
        var requests = 0
        var retries = 0
    }

    private let counts = Locked(Counts())

    /// Counts a request's first attempt.
    func recordRequest(at now: TimeInterval, budget: RetryBudget) {
        counts.withLock { counts in
            Self.roll(&counts, now: now, window: budget.window)
            counts.requests += 1
        }
    }

    /// Takes one retry from the budget if it has one left.
    func withdrawRetry(at now: TimeInterval, budget: RetryBudget) -> Bool {
        counts.withLock { counts in
            Self.roll(&counts, now: now, window: budget.window)
            // No requests yet earn nothing, even at an infinite ratio (where ∞ × 0 would be NaN).
            let earned = counts.requests == 0 ? 0 : budget.ratio * Double(counts.requests)
            let allowed = Double(budget.minimumRetries) + earned
            guard Double(counts.retries) < allowed else { return false }
            counts.retries += 1
            return true
        }
    }

    private static func roll(_ counts: inout Counts, now: TimeInterval, window: TimeInterval) {
        guard now - counts.windowStart >= window else { return }
        counts = Counts(windowStart: now)
    }
}
