#if canImport(Darwin)
import Foundation
#else
import Synchronization
#endif

/// State guarded by one lock: the only place in Tern that reasons about thread safety by hand.
///
/// Every mutable piece of shared state in the module sits behind a `Locked`. Bodies passed to
/// ``withLock(_:)`` must be short and must never call out to user code: callers compute what to
/// do under the lock and do it after unlocking. The state need not be `Sendable` (a dispatch
/// source, say): it is handed over at `init` and only ever touched under the lock.
struct Locked<State>: ~Copyable, Sendable {
    #if canImport(Darwin)
    // Synchronization.Mutex needs macOS 15 / iOS 18; older Apple systems get an NSLock box.
    private final class Box: @unchecked Sendable {
        let lock = NSLock()
        var state: State
        init(_ state: State) { self.state = state }
    }

    private let box: Box

    init(_ state: sending State) { box = Box(state) }

    func withLock<Result: Sendable>(_ body: (inout sending State) -> Result) -> Result {
        box.lock.lock()
        defer { box.lock.unlock() }
        return body(&box.state)
    }
    #else
    // Stored inline in its owner: no allocation of its own, which matters for one per promise.
    private let mutex: Mutex<State>

    init(_ state: sending State) { mutex = Mutex(state) }

    func withLock<Result: Sendable>(_ body: (inout sending State) -> Result) -> Result {
        mutex.withLock { state in body(&state) }
    }
    #endif
}
