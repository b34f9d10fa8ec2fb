#if !canImport(Darwin)
import Synchronization
#endif

/// A one-way flag that a resolver raises once it has settled its promise, so that releasing the
/// resolver need not take the promise's lock to find out.
///
/// It is only a hint: a flag that reads as unset sends the caller to the promise, which knows
/// for sure. On Linux it is an atomic stored inline. Apple platforms get `Atomic` only from
/// macOS 15 / iOS 18, so there the hint is never raised and the resolver always asks the promise.
@usableFromInline
struct SettledHint: ~Copyable, Sendable {
    #if canImport(Darwin)
    @inlinable
    init() {}

    @inlinable
    func raise() {}

    @inlinable
    var isRaised: Bool { false }
    #else
    @usableFromInline
    let flag = Atomic<Bool>(false)

    @inlinable
    init() {}

    /// Relaxed is enough: the flag orders nothing, and a stale `false` only costs a lock.
    @inlinable
    func raise() { flag.store(true, ordering: .relaxed) }

    @inlinable
    var isRaised: Bool { flag.load(ordering: .relaxed) }
    #endif
}
