#if canImport(Darwin) || TERN_PTHREAD_LOCK
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
///
/// Two implementations, one behaviour:
/// - On Linux, `Synchronization.Mutex`, stored inline in its owner: no allocation of its own.
///   (A promise, whose class is generic and made for every request, keeps its state in a
///   ``LockedBox`` instead.)
///   Under the thread sanitizer it tells the sanitizer of each turn at the lock
///   (``ThreadSanitizerHooks``), which cannot see `Mutex` hand a contended lock over.
/// - On Apple platforms, where `Mutex` needs macOS 15 / iOS 18, an `NSLock` box (a pthread
///   mutex, which the sanitizer understands); on Linux too with `-Xswiftc -DTERN_PTHREAD_LOCK`.
///
/// It is a `package` type, shared with `TernTesting`, so that state is guarded by this one lock
/// type rather than a hand-rolled lock per class. Its box is one of the package's few
/// `@unchecked Sendable` types; `.ci/counts` lists how many there are.
@usableFromInline
package struct Locked<State>: ~Copyable, Sendable {
    #if canImport(Darwin) || TERN_PTHREAD_LOCK
    @usableFromInline
    final class Box: @unchecked Sendable {   // unchecked: the lock's own box, whose state only the lock guards
        @usableFromInline
        let lock = NSLock()
        @usableFromInline
        var state: State
        @inlinable
        init(_ state: State) { self.state = state }
    }

    @usableFromInline
    let box: Box

    @inlinable
    package init(_ state: consuming sending State) { box = Box(state) }

    @inlinable
    package func withLock<Result: Sendable, Failure: Error>(_ body: (inout sending State) throws(Failure) -> Result) throws(Failure) -> Result {
        box.lock.lock()
        defer { box.lock.unlock() }
        return try body(&box.state)
    }
    #else
    @usableFromInline
    let mutex: Mutex<State>

    @inlinable
    package init(_ state: consuming sending State) { mutex = Mutex(state) }

    @inlinable
    package func withLock<Result: Sendable, Failure: Error>(_ body: (inout sending State) throws(Failure) -> Result) throws(Failure) -> Result {
        guard let hooks = ThreadSanitizerHooks.hooks else {
            return try mutex.withLock { state throws(Failure) in try body(&state) }
        }
        // Under the sanitizer: the mutex's address names the lock (never read through), told
        // before the state is touched. A `Mutex` cannot be copied, so the address is its own.
        let lock = withUnsafePointer(to: mutex) { UnsafeMutableRawPointer(mutating: $0) }
        return try mutex.withLock { state throws(Failure) in
            hooks.acquire(lock)
            defer { hooks.release(lock) }
            return try body(&state)
        }
    }
    #endif
}
