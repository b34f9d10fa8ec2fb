import Dispatch
import Foundation

/// Where Tern waits: request timeouts, retry backoff, `Retry-After`, the refresh guard's window,
/// and promises' ``Promise/timeout(_:clock:)`` and ``Promise/delay(_:clock:)``.
///
/// The default clock waits in real time, to the millisecond. In tests, `TestClock` from
/// `TernTesting` waits in made-up time that the test advances, so every timing rule runs
/// instantly and the same way every time:
///
/// ```swift
/// let clock = TestClock()
/// let client = APIClient(configuration: .production, clock: clock)
/// // … a request fails, and its retry waits
/// clock.advance(by: 0.5)   // the retry's backoff has passed
/// ```
public protocol APIClock: Sendable {
    /// Seconds on a monotonic scale: only differences mean anything.
    var now: TimeInterval { get }

    /// Runs `action` once `delay` seconds have passed, unless cancelled first. `action` may run
    /// on any thread.
    func schedule(after delay: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any Cancellable
}

/// Something scheduled that can be called off.
public protocol Cancellable: Sendable {
    /// Calls it off; harmless once it has happened or was cancelled.
    func cancel()
}
