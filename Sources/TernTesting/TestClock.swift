import Foundation
import Tern

/// Made-up time for tests: nothing scheduled on it runs until the test advances it.
///
/// ```swift
/// let clock = TestClock()
/// let value = Promise(value: 1).delay(5, clock: clock)
/// await clock.waitForScheduled(1)     // the delay is waiting
/// clock.advance(by: 5)                // and now it is over, instantly
/// ```
///
/// Actions due run on the thread that calls ``advance(by:)``, in deadline order, and the clock
/// reads each one's deadline as ``now`` while it runs.
public final class TestClock: APIClock, @unchecked Sendable {
    private struct Entry {
        let id: Int
        let deadline: TimeInterval
        let action: @Sendable () -> Void
    }

    private let lock = NSLock()
    private var current: TimeInterval = 0
    private var entries: [Entry] = []
    private var nextID = 0
    private var delays: [TimeInterval] = []

    /// Creates a clock at time zero.
    public init() {}

    public var now: TimeInterval {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    public func schedule(after delay: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any Cancellable {
        lock.lock()
        defer { lock.unlock() }
        nextID += 1
        entries.append(Entry(id: nextID, deadline: current + max(0, delay), action: action))
        delays.append(delay)
        return Scheduled(id: nextID, clock: self)
    }

    /// Every delay ever scheduled, in order: what a test checks backoff and jitter against.
    public var scheduledDelays: [TimeInterval] {
        lock.lock()
        defer { lock.unlock() }
        return delays
    }

    /// How many scheduled actions are waiting.
    public var pendingCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return entries.count
    }

    /// Moves time forward by `interval`, running what falls due, in deadline order.
    public func advance(by interval: TimeInterval) {
        lock.lock()
        let target = current + interval
        lock.unlock()
        while let entry = nextDue(by: target) {
            entry.action()
        }
        lock.lock()
        current = max(current, target)
        lock.unlock()
    }

    /// Waits (in real time, up to `timeout` seconds) until at least `count` actions are waiting.
    /// Returns whether they are.
    ///
    /// The default timeout is long because it costs nothing when the actions arrive, and a
    /// loaded machine (a sanitizer run, say) can hold the code that schedules them back for
    /// seconds. Polling backs off to 16 ms.
    @discardableResult
    public func waitForScheduled(_ count: Int, timeout: TimeInterval = 30) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var interval: UInt64 = 1_000_000
        while pendingCount < count {
            guard Date() < deadline else { return false }
            try? await Task.sleep(nanoseconds: interval)
            interval = min(interval * 2, 16_000_000)
        }
        return true
    }

    private func nextDue(by target: TimeInterval) -> Entry? {
        lock.lock()
        defer { lock.unlock() }
        guard let index = entries.indices.filter({ entries[$0].deadline <= target })
            .min(by: { (entries[$0].deadline, entries[$0].id) < (entries[$1].deadline, entries[$1].id) }) else { return nil }
        let entry = entries.remove(at: index)
        current = max(current, entry.deadline)
        return entry
    }

    fileprivate func cancel(_ id: Int) {
        lock.lock()
        defer { lock.unlock() }
        entries.removeAll { $0.id == id }
    }

    private struct Scheduled: Cancellable {
        let id: Int
        let clock: TestClock
        func cancel() { clock.cancel(id) }
    }
}
