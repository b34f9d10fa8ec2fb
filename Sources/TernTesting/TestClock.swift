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
public final class TestClock: APIClock, Sendable {
    private struct Entry {
        let id: Int
        let deadline: TimeInterval
        let action: @Sendable () -> Void
    }

    private struct State {
        var current: TimeInterval = 0
        var entries: [Entry] = []
        var nextID = 0
        var delays: [TimeInterval] = []
    }

    private let state = Locked(State())

    /// Creates a clock at time zero.
    public init() {}

    /// The current time, in seconds.
    public var now: TimeInterval { state.withLock { $0.current } }

    /// Runs `action` once `delay` seconds have passed; cancelling what it returns stops it.
    public func schedule(after delay: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any Cancellable {
        let id = state.withLock { state in
            state.nextID += 1
            state.entries.append(Entry(id: state.nextID, deadline: state.current + max(0, delay), action: action))
            state.delays.append(delay)
            return state.nextID
        }
        return Scheduled(id: id, clock: self)
    }

    /// Every delay ever scheduled, in order: what a test checks backoff and jitter against.
    public var scheduledDelays: [TimeInterval] { state.withLock { $0.delays } }

    /// How many scheduled actions are waiting.
    package var pendingCount: Int { state.withLock { $0.entries.count } }

    /// Moves time forward by `interval`, running what falls due, in deadline order.
    public func advance(by interval: TimeInterval) {
        let target = state.withLock { $0.current + interval }
        while let action = nextDue(by: target) {
            action()
        }
        state.withLock { $0.current = max($0.current, target) }
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

    /// The action due first by `target`, taken out, with the clock set to its deadline.
    private func nextDue(by target: TimeInterval) -> (@Sendable () -> Void)? {
        state.withLock { state in
            guard let index = state.entries.indices.filter({ state.entries[$0].deadline <= target })
                .min(by: { (state.entries[$0].deadline, state.entries[$0].id) < (state.entries[$1].deadline, state.entries[$1].id) })
            else { return nil }
            let entry = state.entries.remove(at: index)
            state.current = max(state.current, entry.deadline)
            return entry.action
        }
    }

    fileprivate func cancel(_ id: Int) {
        state.withLock { $0.entries.removeAll { $0.id == id } }
    }

    private struct Scheduled: Cancellable {
        let id: Int
        let clock: TestClock
        func cancel() { clock.cancel(id) }
    }
}
