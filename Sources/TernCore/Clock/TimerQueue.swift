import Dispatch
import Foundation

/// Runs actions at deadlines, to the millisecond, with one dispatch timer for all of them.
///
/// A request's timeout is scheduled when it is sent and cancelled when it finishes, almost
/// always long before it would fire; so scheduling and cancelling must cost next to nothing.
/// Creating a dispatch source per request cost more than the rest of Tern's own work per request.
/// Here a schedule is a heap insertion, and a cancel touches only its own ``Timer``, never the
/// queue that every request shares. Cancelled timers left in the heap are dropped when they
/// reach its top, or all at once when the heap has doubled since it was last swept.
final class TimerQueue: Sendable {
    /// One scheduled action. Cancelling it drops the action at once.
    final class Timer: Cancellable {
        private let action: Locked<StoredAction?>

        init(_ action: @escaping @Sendable () -> Void) {
            self.action = Locked(StoredAction(action))
        }

        func cancel() {
            _ = take()
        }

        /// The action, handed out once: to run it, or to drop it.
        func take() -> StoredAction? {
            action.withLock { action in
                defer { action = nil }
                return action
            }
        }

        /// Whether it has neither run nor been cancelled.
        var isPending: Bool { action.withLock { $0 != nil } }
    }

    private struct Entry: Comparable {
        let deadline: UInt64
        let sequence: UInt64
        let timer: Timer
        static func == (lhs: Entry, rhs: Entry) -> Bool { (lhs.deadline, lhs.sequence) == (rhs.deadline, rhs.sequence) }
        static func < (lhs: Entry, rhs: Entry) -> Bool { (lhs.deadline, lhs.sequence) < (rhs.deadline, rhs.sequence) }
    }

    private struct State {
        var heap: [Entry] = []
        var nextSequence: UInt64 = 0
        /// The one dispatch timer, armed only under the lock: armed outside it, a far deadline's
        /// arming could land after a near one's, and the near action waited for the far one.
        let source: any DispatchSourceTimer
        private(set) var armedDeadline = UInt64.max
        /// The heap's size that triggers the next sweep of cancelled timers.
        var sweepAt = 64

        mutating func arm(at deadline: UInt64) {
            armedDeadline = deadline
            guard deadline != .max else { return }
            source.schedule(deadline: DispatchTime(uptimeNanoseconds: deadline), leeway: .milliseconds(1))
        }
    }

    private let state: Locked<State>

    init() {
        let source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "tern.timers", qos: .userInitiated))
        source.schedule(deadline: .distantFuture, leeway: .milliseconds(1))
        state = Locked(State(source: source))
        state.withLock { state in
            state.source.setEventHandler { [weak self] in self?.fire() }
            state.source.resume()
        }
    }

    deinit {
        state.withLock { $0.source.cancel() }
    }

    /// Runs `action` on the timer queue `interval` seconds from now, unless cancelled first.
    ///
    /// An infinite interval, or one too long to count in nanoseconds of uptime (about 580
    /// years), never fires; a negative or NaN one fires at once.
    func schedule(after interval: TimeInterval, _ action: @escaping @Sendable () -> Void) -> Timer {
        let timer = Timer(action)
        guard let deadline = Self.deadline(after: interval, from: DispatchTime.now().uptimeNanoseconds) else {
            return timer  // never fires; cancelling it still drops the action
        }
        state.withLock { state in
            state.nextSequence += 1
            Self.push(Entry(deadline: deadline, sequence: state.nextSequence, timer: timer), onto: &state.heap)
            if state.heap.count >= state.sweepAt {
                // Each timer's own lock is taken inside the queue's; never the other way round.
                state.heap = state.heap.filter(\.timer.isPending)
                Self.heapify(&state.heap)
                state.sweepAt = max(64, 2 * state.heap.count)
            }
            if deadline < state.armedDeadline { state.arm(at: deadline) }
        }
        return timer
    }

    /// The uptime in nanoseconds `interval` seconds after `now`, or `nil` for never. Converting
    /// a huge or infinite interval to an integer traps, so this is the one place that does it.
    static func deadline(after interval: TimeInterval, from now: UInt64) -> UInt64? {
        guard interval > 0 else { return now }  // also NaN
        let nanoseconds = interval * 1e9
        guard nanoseconds < Double(UInt64.max - now) else { return nil }
        return now + UInt64(nanoseconds)
    }

    /// Timers in the heap, cancelled ones included, and those still pending: for tests.
    var counts: (heap: Int, live: Int) {
        state.withLock { state in (state.heap.count, state.heap.filter(\.timer.isPending).count) }
    }

    /// Runs what is due, then arms the timer for what comes next.
    private func fire() {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = state.withLock { state -> [Timer] in
            var due: [Timer] = []
            while let first = state.heap.first, first.deadline <= now || !first.timer.isPending {
                Self.popFirst(from: &state.heap)
                if first.deadline <= now { due.append(first.timer) }
            }
            state.arm(at: state.heap.first?.deadline ?? .max)
            return due
        }
        due.forEach { $0.take()?.run() }
    }

    // MARK: Binary min-heap

    private static func push(_ entry: Entry, onto heap: inout [Entry]) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child] < heap[parent] else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private static func popFirst(from heap: inout [Entry]) {
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        siftDown(0, in: &heap)
    }

    private static func heapify(_ heap: inout [Entry]) {
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index, in: &heap) }
    }

    private static func siftDown(_ start: Int, in heap: inout [Entry]) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count && heap[left] < heap[smallest] { smallest = left }
            if right < heap.count && heap[right] < heap[smallest] { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
