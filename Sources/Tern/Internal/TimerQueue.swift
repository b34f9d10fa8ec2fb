import Dispatch
import Foundation

/// Runs actions at deadlines, to the millisecond, with one dispatch timer for all of them.
///
/// A request's timeout is scheduled when it is sent and cancelled when it finishes, almost
/// always long before it would fire; so scheduling and cancelling must cost next to nothing.
/// Creating a dispatch source per request cost more than the rest of Tern's own work per request.
/// Here a schedule is a heap insertion and a cancel a dictionary removal; cancelled entries left
/// in the heap are dropped when they reach its top, or all at once when they outnumber the live.
final class TimerQueue: Sendable {
    private struct Entry: Comparable {
        let deadline: UInt64
        let id: UInt64
        static func < (lhs: Entry, rhs: Entry) -> Bool { (lhs.deadline, lhs.id) < (rhs.deadline, rhs.id) }
    }

    private struct State {
        var heap: [Entry] = []
        var actions: [UInt64: @Sendable () -> Void] = [:]
        var nextID: UInt64 = 0
        var armedDeadline = UInt64.max
    }

    private let state = Locked(State())
    private let source: Locked<any DispatchSourceTimer>

    init() {
        let source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "tern.timers", qos: .userInitiated))
        source.schedule(deadline: .distantFuture, leeway: .milliseconds(1))
        self.source = Locked(source)
        self.source.withLock { timer in
            timer.setEventHandler { [weak self] in self?.fire() }
            timer.resume()
        }
    }

    deinit {
        source.withLock { $0.cancel() }
    }

    /// Runs `action` on the timer queue `interval` seconds from now, unless cancelled first.
    /// Returns the identifier to cancel it with.
    func schedule(after interval: TimeInterval, _ action: @escaping @Sendable () -> Void) -> UInt64 {
        let deadline = DispatchTime.now().uptimeNanoseconds &+ UInt64(max(0, interval) * 1e9)
        let (id, rearm) = state.withLock { state -> (UInt64, Bool) in
            state.nextID += 1
            let entry = Entry(deadline: deadline, id: state.nextID)
            state.actions[entry.id] = action
            Self.push(entry, onto: &state.heap)
            guard deadline < state.armedDeadline else { return (entry.id, false) }
            state.armedDeadline = deadline
            return (entry.id, true)
        }
        if rearm { arm(at: deadline) }
        return id
    }

    /// Forgets the action; harmless if it ran or was cancelled already.
    func cancel(_ id: UInt64) {
        state.withLock { state in
            guard state.actions.removeValue(forKey: id) != nil else { return }
            // Mostly-dead heaps are rebuilt, so cancelled entries cannot pile up.
            if state.heap.count > 64 && state.heap.count > 2 * state.actions.count {
                state.heap = state.heap.filter { state.actions[$0.id] != nil }
                Self.heapify(&state.heap)
            }
        }
    }

    /// Entries in the heap, cancelled ones included, and actions still to run: for tests.
    var counts: (heap: Int, live: Int) {
        state.withLock { ($0.heap.count, $0.actions.count) }
    }

    /// Runs what is due, then arms the timer for what comes next.
    private func fire() {
        let now = DispatchTime.now().uptimeNanoseconds
        let (due, next) = state.withLock { state -> ([@Sendable () -> Void], UInt64) in
            var due: [@Sendable () -> Void] = []
            while let first = state.heap.first, first.deadline <= now || state.actions[first.id] == nil {
                Self.popFirst(from: &state.heap)
                if let action = state.actions.removeValue(forKey: first.id) { due.append(action) }
            }
            state.armedDeadline = state.heap.first?.deadline ?? .max
            return (due, state.armedDeadline)
        }
        if next != .max { arm(at: next) }
        due.forEach { $0() }
    }

    private func arm(at deadline: UInt64) {
        source.withLock { $0.schedule(deadline: DispatchTime(uptimeNanoseconds: deadline), leeway: .milliseconds(1)) }
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
