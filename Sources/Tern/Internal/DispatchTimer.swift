import Dispatch
import Foundation

/// Runs work once after a delay, to the millisecond, unless cancelled first.
///
/// `DispatchQueue.asyncAfter` allows a leeway of a tenth of the delay; a timer source with an
/// explicit 1 ms leeway keeps timeouts exact, which URLSession on Linux does not (it truncates
/// them to whole seconds).
final class DispatchTimer: Sendable {
    private let source: Locked<any DispatchSourceTimer>

    /// Schedules `work` on a global queue after `delay` seconds.
    init(after delay: TimeInterval, _ work: @escaping @Sendable () -> Void) {
        let source = DispatchSource.makeTimerSource(queue: .global())
        source.setEventHandler(handler: work)
        source.schedule(deadline: .now() + max(0, delay), leeway: .milliseconds(1))
        source.resume()
        self.source = Locked(source)
    }

    /// Stops the timer if it has not fired; harmless afterwards.
    func cancel() {
        source.withLock { $0.cancel() }
    }
}
