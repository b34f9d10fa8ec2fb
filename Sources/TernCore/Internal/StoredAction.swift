/// A closure with no arguments, as Tern stores it: a promise's cancellation handlers, a timer's
/// action.
///
/// A bare closure stored in a generic container (a list, a lock's state) is converted to the
/// container's most general calling convention, which costs a heap-allocated thunk per closure,
/// once per request on the hot path. Wrapped in a struct it keeps its own convention and costs
/// nothing to store.
@usableFromInline
struct StoredAction: Sendable {
    @usableFromInline
    let run: @Sendable () -> Void

    @inlinable
    init(_ run: @escaping @Sendable () -> Void) {
        self.run = run
    }
}
