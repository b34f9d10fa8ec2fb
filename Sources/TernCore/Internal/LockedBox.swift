/// State behind a ``Locked`` lock, in a box of its own: for the state of a generic class.
///
/// A `Locked` sits inline in its owner. In a generic class (a promise) that costs at every
/// release: the class's `deinit`, which Swift never specializes, looks up the generic metadata
/// of each part of the lock to destroy it. A box generic over the state itself finds that
/// metadata in its own type, so it costs one allocation and no lookup.
@usableFromInline
package final class LockedBox<State>: @unchecked Sendable {   // unchecked: the lock's own box, whose state only the lock guards
    @usableFromInline
    let lock = Locked(())
    /// Touched only under `lock`, which is what keeps accesses apart.
    @usableFromInline
    @exclusivity(unchecked)
    var state: State

    @inlinable
    package init(_ state: consuming sending State) { self.state = state }

    /// Runs `body` on the state under the lock; the rules of ``Locked/withLock(_:)`` apply.
    @inlinable
    package func withLock<Result: Sendable, Failure: Error>(_ body: (inout sending State) throws(Failure) -> Result) throws(Failure) -> Result {
        try lock.withLock { _ throws(Failure) in try body(&state) }
    }
}
