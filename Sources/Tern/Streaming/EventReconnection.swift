import Foundation

/// How an event source (``AbstractAPI/events(route:parameters:options:reconnection:)``) reconnects after its connection ends: the wait before the first
/// attempt (until the server's `retry` field sets another), and how the wait grows while
/// attempts fail.
///
/// Whatever is asked, by you or by the server's `retry`, the source waits at least half a
/// second before it connects again, so that a server that answers and closes at once, or one
/// that asks for `retry: 0`, is not asked again hundreds of times a second. While attempts
/// fail, the wait doubles with each, from at least that floor, up to `maximumDelay`, and a
/// random part of it (up to half) is left out, so that many clients that lost the same server
/// do not come back all at once. A connection that ends within a second of its request without
/// an event counts as a failed attempt here (not for `maximumFailures`): a server that answers
/// and closes at once is backed off. One that brought an event, or stayed open longer (a quiet
/// feed the server closes now and then), starts the wait afresh, however it ended; one that
/// ended well ends a row of failures.
public struct EventReconnection: Sendable, Equatable {
    /// The wait before reconnecting, in seconds, until the server sends `retry`; at least half a
    /// second.
    package var delay: TimeInterval
    /// The longest wait, however many attempts have failed in a row (each doubles it), and
    /// however long the server's `retry` asks for.
    package var maximumDelay: TimeInterval
    /// How many attempts may fail in a row before the source ends with the last one's error;
    /// `nil` for no limit. Each attempt is one request: the source's reconnections are its
    /// retries, so its requests go out without the request retry policy.
    package var maximumFailures: Int?

    /// Reconnects after `delay` (3 seconds, as browsers do), doubling it up to `maximumDelay`
    /// while attempts fail.
    ///
    /// - Parameters:
    ///   - delay: The wait before reconnecting, in seconds, until the server sends `retry`; at
    ///     least half a second.
    ///   - maximumDelay: The longest wait, however many attempts have failed in a row (each
    ///     doubles it), and however long the server's `retry` asks for.
    ///   - maximumFailures: How many attempts may fail in a row before the source ends with the
    ///     last one's error; `nil` for no limit. Each attempt is one request: the source's
    ///     reconnections are its retries, so its requests go out without the request retry policy.
    public init(delay: TimeInterval = 3, maximumDelay: TimeInterval = 60, maximumFailures: Int? = nil) {
        self.delay = delay
        self.maximumDelay = maximumDelay
        self.maximumFailures = maximumFailures
    }

    /// The shortest wait between two connections, whatever the server or the settings ask for.
    static let minimumDelay: TimeInterval = 0.5

    /// How long a connection that brings no event must last, from its request on, not to count
    /// as a failed attempt: one the server answers and closes at once is.
    static let shortestQuietConnection: TimeInterval = 1

    /// The wait before the next attempt, after `failures` failed attempts in a row, when the
    /// server asked for `serverDelay` seconds (if it did): never under ``minimumDelay``, nor
    /// over ``maximumDelay`` (a `retry` of Int.max milliseconds waited 292 million years, and
    /// made no number of nanoseconds: the process trapped) unless that is under the floor.
    /// After a failure, the doubled wait loses a random part of up to half (`random` picks
    /// in the range it is given).
    func wait(afterFailures failures: Int, serverDelay: TimeInterval?,
              random: (ClosedRange<Double>) -> Double = { Double.random(in: $0) }) -> TimeInterval {
        // NaN and negative settings are taken as the floor; at most a year, so that the wait
        // makes a number of nanoseconds and a range to pick in.
        let base = Swift.max(Self.minimumDelay, serverDelay ?? delay)
        let ceiling = Swift.min(365 * 86_400, Swift.max(Self.minimumDelay, maximumDelay))
        guard failures > 0 else { return Swift.min(ceiling, base) }
        let backoff = Swift.min(ceiling, base * pow(2, Double(Swift.min(failures, 30))))
        return Swift.max(Self.minimumDelay, random((backoff / 2)...backoff))
    }
}
