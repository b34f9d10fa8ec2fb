import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport

@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct TimerQueueTests {
    @Test func actionsRunInDeadlineOrderAndNotBefore() async throws {
        let timers = TimerQueue()
        let fired = Recorder<Int>()
        let started = Date()
        // Deadlines 200 ms apart: scheduling the three, even under the thread sanitizer on a
        // busy machine, takes far less (20 ms apart, a CI run once saw them out of order).
        for (index, delay) in [0.6, 0.2, 0.4].enumerated() {
            _ = timers.schedule(after: delay) { fired.append(index) }
        }
        #expect(await eventually { fired.items.count == 3 })
        #expect(fired.items == [1, 2, 0])
        #expect(Date().timeIntervalSince(started) >= 0.6)
    }

    @Test func aCancelledActionNeverRuns() async throws {
        let timers = TimerQueue()
        let fired = Recorder<String>()
        // Due before the kept one, and far enough off that it is surely cancelled in time.
        let cancelled = timers.schedule(after: 0.3) { fired.append("cancelled") }
        _ = timers.schedule(after: 0.6) { fired.append("kept") }
        cancelled.cancel()
        cancelled.cancel()
        #expect(await eventually { fired.items == ["kept"] })
        #expect(timers.counts.heap == 0 && timers.counts.live == 0)
    }

    @Test func cancelledEntriesDoNotPileUp() {
        let timers = TimerQueue()
        for _ in 0..<10_000 {
            timers.schedule(after: 3600) {}.cancel()
        }
        let counts = timers.counts
        #expect(counts.live == 0)
        #expect(counts.heap <= 64)
    }

    @Test func anEarlierDeadlineRearmsTheTimer() async throws {
        let timers = TimerQueue()
        let fired = Recorder<String>()
        _ = timers.schedule(after: 3600) { fired.append("late") }
        _ = timers.schedule(after: 0.01) { fired.append("early") }
        #expect(await eventually { fired.items == ["early"] })
    }

    /// Threads scheduling at once, a far deadline and a near one: the timer ends armed for the
    /// near one. (Armed outside the queue's lock, the far one's arming could land last, and the
    /// near action waited for it: a 1 s timeout that fired only at 10 s.)
    @Test func schedulesRacingEachOtherLeaveTheNearestDeadlineArmed() async throws {
        let fired = Recorder<Int>()
        var queues: [TimerQueue] = []
        for round in 0..<3000 {
            let timers = TimerQueue()
            queues.append(timers)
            DispatchQueue.concurrentPerform(iterations: 4) { index in
                if index.isMultiple(of: 2) {
                    _ = timers.schedule(after: 3600) {}
                } else {
                    _ = timers.schedule(after: 0.001) { fired.append(round) }
                }
            }
        }
        #expect(await eventually(timeout: 10) { fired.items.count == 6000 }, "\(6000 - fired.items.count) near actions waited for a far deadline")
        withExtendedLifetime(queues) {}
    }

    /// Converting a huge interval to nanoseconds used to trap; now it means "never".
    @Test(arguments: [TimeInterval.infinity, .greatestFiniteMagnitude, 1e11])
    func anIntervalTooLongToCountNeverFires(interval: TimeInterval) async throws {
        let timers = TimerQueue()
        let fired = Recorder<String>()
        let never = timers.schedule(after: interval) { fired.append("never") }
        _ = timers.schedule(after: 0.01) { fired.append("soon") }
        #expect(await eventually { fired.items == ["soon"] })
        #expect(never.isPending)
        never.cancel()
        #expect(!never.isPending)
    }

    @Test(arguments: [-1, 0, TimeInterval.nan, -TimeInterval.infinity])
    func aNegativeOrNaNIntervalFiresAtOnce(interval: TimeInterval) async throws {
        let timers = TimerQueue()
        let fired = Recorder<Bool>()
        _ = timers.schedule(after: interval) { fired.append(true) }
        #expect(await eventually { fired.items == [true] })
    }

    @Test func deadlinesSaturateRatherThanOverflow() {
        #expect(TimerQueue.deadline(after: 1, from: 5) == 1_000_000_005)
        #expect(TimerQueue.deadline(after: 1e10, from: UInt64.max - 10) == nil)
        #expect(TimerQueue.deadline(after: .nan, from: 7) == 7)
    }
}
