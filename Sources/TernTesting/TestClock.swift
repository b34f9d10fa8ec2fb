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
/// reads each one's deadline as ``now`` while it runs. A ``StubTransport`` on the clock tells it
/// which of its waits send something (a delayed answer, a streamed answer's next piece), so that
/// ``advanceToNextDelivery(timeout:)`` moves to exactly that, however many other timers wait.
public final class TestClock: APIClock, Sendable {
    private struct Entry {
        let id: Int
        let deadline: TimeInterval
        /// Whether a stub transport sends something when it runs.
        let isDelivery: Bool
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
        schedule(after: delay, isDelivery: false, action)
    }

    /// Runs `action`, which sends a stub's answer or its next piece and returns once it is
    /// handed over, once `delay` seconds have passed: what ``advanceToNextDelivery(timeout:)``
    /// moves to.
    func scheduleDelivery(after delay: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any Cancellable {
        schedule(after: delay, isDelivery: true, action)
    }

    private func schedule(after delay: TimeInterval, isDelivery: Bool, _ action: @escaping @Sendable () -> Void) -> any Cancellable {
        let id = state.withLock { state in
            state.nextID += 1
            state.entries.append(Entry(id: state.nextID, deadline: state.current + max(0, delay), isDelivery: isDelivery, action: action))
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
        advance(to: state.withLock { $0.current + interval })
    }

    /// Moves time forward to `target`, running what falls due, in deadline order.
    private func advance(to target: TimeInterval) {
        while let action = nextDue(by: target) {
            action()
        }
        state.withLock { $0.current = max($0.current, target) }
    }

    /// Moves the clock to the moment a ``StubTransport`` on it next sends something it waits to
    /// send (a delayed answer, or a streamed answer's next piece), running everything due by
    /// then in deadline order, and returns once that has been handed to the request: a stream
    /// then has its piece, and the test reads it without racing the clock.
    ///
    /// It first waits (in real time, up to `timeout` seconds) until the stub has scheduled that
    /// send, since the request reaches the transport, and each piece is scheduled after the one
    /// before has gone, on other threads. It never moves past the send, so a timer the test did
    /// not ask for (the request's timeout, a stream's idle timeout) fires only if it is due
    /// first, as it would in real time. Returns `false`, the clock unmoved, if nothing was
    /// scheduled to send in time (the answer has been sent whole), or the task is cancelled.
    ///
    /// ```swift
    /// var events = client.stream(route: .post("/v1/completions")).events.makeAsyncIterator()
    /// await clock.advanceToNextDelivery()       // the first event's wait is over
    /// let first = try await events.next()
    /// ```
    @discardableResult
    public func advanceToNextDelivery(timeout: TimeInterval = 30) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var interval: UInt64 = 1_000_000
        while true {
            let next = state.withLock { state in
                state.entries.filter(\.isDelivery).map(\.deadline).min()
            }
            if let due = next {
                advance(to: max(due, now))
                return true
            }
            guard Date() < deadline, !Task.isCancelled else { return false }
            try? await Task.sleep(nanoseconds: interval)
            interval = min(interval * 2, 16_000_000)
        }
    }

    /// Waits (in real time, up to `timeout` seconds) until at least `count` actions are waiting.
    /// Returns whether they are; `false` at once if the task is cancelled.
    ///
    /// The default timeout is long because it costs nothing when the actions arrive, and a
    /// loaded machine (a sanitizer run, say) can hold the code that schedules them back for
    /// seconds. Polling backs off to 16 ms.
    @discardableResult
    public func waitForScheduled(_ count: Int, timeout: TimeInterval = 30) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var interval: UInt64 = 1_000_000
        while pendingCount < count {
            // A cancelled task's sleep returns at once: waiting on would spin until the deadline.
            guard Date() < deadline, !Task.isCancelled else { return false }
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
