import Dispatch
import Foundation

/// Collects values from many threads for a test to inspect afterwards.
final class Recorder<Item: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Item] = []

    func append(_ item: Item) {
        lock.lock()
        defer { lock.unlock() }
        storage.append(item)
    }

    /// Appends `item` and says how many items there are with it, in one turn at the lock: two
    /// threads that append and then count each may count both.
    func appendCounting(_ item: Item) -> Int {
        lock.lock()
        defer { lock.unlock() }
        storage.append(item)
        return storage.count
    }

    var items: [Item] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
}

/// A serial queue that can tell whether code runs on it.
struct TaggedQueue: Sendable {
    private static let key = DispatchSpecificKey<String>()
    let queue: DispatchQueue
    let label: String

    init(_ label: String) {
        self.label = label
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: Self.key, value: label)
    }

    /// The label of the tagged queue the caller runs on, if any.
    static var current: String? { DispatchQueue.getSpecific(key: key) }
}

/// The result of `task`, a task of its own that a test awaits: cancelled with the test (at its
/// time limit), where awaiting its `result` would go on past any limit should it never end.
func outcome<Success: Sendable>(of task: Task<Success, any Error>) async -> Result<Success, any Error> {
    await withTaskCancellationHandler { await task.result } onCancel: { task.cancel() }
}

/// Waits until `condition` holds, polling; gives up after `timeout` seconds.
///
/// The timeout is generous because it costs nothing when the condition comes true: under the
/// thread sanitizer on a busy 2-core machine, a new Task was seen to wait 6 s for a thread.
/// Polling backs off to 16 ms, so that tests waiting side by side do not themselves keep the
/// shared threads busy.
func eventually(timeout: TimeInterval = 30, _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    var interval: UInt64 = 1_000_000
    // A cancelled task's sleep returns at once (a test past its time limit is cancelled):
    // polling on would spin until the deadline.
    while Date() < deadline, !Task.isCancelled {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: interval)
        interval = min(interval * 2, 16_000_000)
    }
    return condition()
}

/// An error for tests to throw and recognise.
struct TestError: Error, Equatable {
    var code = 1
}

/// Watches an object without keeping it alive, to prove that it is freed.
final class WeakRef<Object: AnyObject>: @unchecked Sendable {
    private(set) weak var object: Object?
    init(_ object: Object) { self.object = object }
    var isFreed: Bool { object == nil }
}
