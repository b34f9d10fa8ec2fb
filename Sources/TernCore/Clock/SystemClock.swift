import Dispatch
import Foundation

/// Real time: actions run on a timer queue of the clock's own, within a millisecond of their
/// deadline, however many are scheduled.
public final class SystemClock: APIClock {
    private let timers = TimerQueue()

    /// The clock promises use unless given another.
    public static let shared = SystemClock()

    /// Creates a clock with a timer queue of its own.
    public init() {}

    /// The current time, in seconds.
    public var now: TimeInterval {
        TimeInterval(DispatchTime.now().uptimeNanoseconds) / 1e9
    }

    /// Runs `action` once `delay` seconds have passed; cancelling what it returns stops it.
    public func schedule(after delay: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any Cancellable {
        timers.schedule(after: delay, action)
    }
}
