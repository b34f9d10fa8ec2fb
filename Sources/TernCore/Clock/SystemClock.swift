import Dispatch
import Foundation

/// Real time: actions run on a timer queue of the clock's own, within a millisecond of their
/// deadline, however many are scheduled. The clock everything uses unless given another; not
/// public, since a user only ever passes a clock to replace it (`TestClock`, in tests).
@usableFromInline
package final class SystemClock: APIClock {
    private let timers = TimerQueue()

    /// The clock promises use unless given another.
    @usableFromInline
    package static let shared = SystemClock()

    /// Creates a clock with a timer queue of its own.
    package init() {}

    /// The current time, in seconds.
    @usableFromInline
    package var now: TimeInterval {
        TimeInterval(DispatchTime.now().uptimeNanoseconds) / 1e9
    }

    /// Runs `action` once `delay` seconds have passed; cancelling what it returns stops it.
    @usableFromInline
    package func schedule(after delay: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any Cancellable {
        timers.schedule(after: delay, action)
    }
}
