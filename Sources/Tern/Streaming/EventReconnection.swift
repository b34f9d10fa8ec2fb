import Foundation

/// How an ``EventSource`` reconnects after its connection ends: the wait before the first
/// attempt (until the server's `retry` field sets another), and how the wait grows while
/// attempts fail.
public struct EventReconnection: Sendable, Equatable {
    /// The wait before reconnecting, in seconds, until the server sends `retry`.
    public var delay: TimeInterval
    /// The longest wait, however many attempts have failed in a row (each doubles it), and
    /// however long the server's `retry` asks for.
    public var maximumDelay: TimeInterval
    /// How many attempts may fail in a row before the source ends with the last one's error;
    /// `nil` for no limit.
    public var maximumFailures: Int?

    /// Reconnects after `delay` (3 seconds, as browsers do), doubling it up to `maximumDelay`
    /// while attempts fail.
    public init(delay: TimeInterval = 3, maximumDelay: TimeInterval = 60, maximumFailures: Int? = nil) {
        self.delay = delay
        self.maximumDelay = maximumDelay
        self.maximumFailures = maximumFailures
    }

    /// The wait before the next attempt, after `failures` failed attempts in a row, when the
    /// server asked for `serverDelay` seconds (if it did): never over ``maximumDelay``, whatever
    /// the server asked for (a `retry` of Int.max milliseconds waited 292 million years, and
    /// made no number of nanoseconds: the process trapped).
    func wait(afterFailures failures: Int, serverDelay: TimeInterval?) -> TimeInterval {
        let base = serverDelay ?? delay
        let wait = failures > 0 ? base * pow(2, Double(min(failures, 30))) : base
        return min(maximumDelay, wait)
    }
}
