/// A promise this one waits on, which it may cancel when nobody else needs it any more.
@usableFromInline
protocol Upstream: AnyObject, Sendable {
    /// One dependent no longer needs the result; the last one to say so cancels it and runs its
    /// handlers. Returns the promise it waited on in turn, for the caller to release next (never
    /// recursively), and whether the caller must then deliver the cancel (``deliverCancel()``).
    func releaseInterest() -> (upstream: (any Upstream)?, delivers: Bool)
    /// Delivers the cancel ``releaseInterest()`` made, once what it released has been released.
    func deliverCancel()
}

/// The pure state of one promise: what it holds and what happens next, with no locks and no
/// queues, so that every rule is unit-tested on its own. ``Promise`` keeps it behind its lock
/// and carries out the returned actions after unlocking.
@usableFromInline
package struct PromiseState<Value: Sendable>: Sendable {
    /// What a caller must do after settling or cancelling.
    @usableFromInline
    struct Settlement: Sendable {
        /// Callbacks are waiting: run the delivery loop for this promise.
        @usableFromInline
        var needsDelivery = false
        /// Producers' cancellation handlers to call (only when cancelled).
        @usableFromInline
        var cancelHandlers = InlineList<StoredAction>.none
        /// Promises this one no longer waits for (only when it settled before them).
        @usableFromInline
        var releasedUpstream: (any Upstream)?

        @inlinable
        init() {}
    }

    /// The result, once settled; it never changes afterwards.
    @usableFromInline
    var result: Result<Value, any Error>?
    /// Registered callbacks that have not run yet.
    @usableFromInline
    var callbacks = InlineList<Callback<Value>>.none
    /// A delivery loop owns `callbacks` and will pick up what is registered meanwhile,
    /// so callbacks run in the order they were registered.
    @usableFromInline
    var isDelivering = false
    @usableFromInline
    var cancelHandlers = InlineList<StoredAction>.none
    /// The promise whose result this one waits for, if any.
    @usableFromInline
    var upstream: (any Upstream)?
    /// Derived promises that still want this result.
    @usableFromInline
    var dependents = 0
    /// A side-effect observer (`onSuccess`, `finally`, …) waits for the result: those cannot
    /// be cancelled, so the promise is never cancelled on behalf of its dependents.
    @usableFromInline
    var isPinned = false
    /// Cancelled, its producer's handlers (or those of the promises it cancels in turn) still
    /// running: the result is shown and delivered only once they have run, so that whoever
    /// hears "cancelled" finds what they did (a download's bytes kept for a resume).
    @usableFromInline
    var isCancelling = false

    @inlinable
    init(result: Result<Value, any Error>? = nil, upstream: (any Upstream)? = nil) {
        self.result = result
        self.upstream = upstream
    }

    /// A pending state, for a promise the layers above settle themselves.
    @inlinable
    package init() {
        self.init(result: nil, upstream: nil)
    }

    @inlinable
    var isPending: Bool { result == nil }

    /// Sets the result unless there is one already: only the first settlement counts.
    @inlinable
    mutating func settle(_ result: Result<Value, any Error>, releasingUpstream: Bool = false) -> Settlement? {
        guard self.result == nil else { return nil }
        self.result = result
        var settlement = Settlement()
        settlement.needsDelivery = !callbacks.isEmpty
        isDelivering = settlement.needsDelivery
        if releasingUpstream { settlement.releasedUpstream = upstream }
        upstream = nil
        cancelHandlers = .none
        return settlement
    }

    /// Settles as cancelled, handing back the producer's handlers and the upstream to release.
    @inlinable
    mutating func cancel() -> Settlement? {
        let handlers = cancelHandlers
        guard var settlement = settle(.failure(APIError.cancelled), releasingUpstream: true) else { return nil }
        if !handlers.isEmpty || settlement.releasedUpstream != nil {
            // The delivery loop, run after the handlers and the upstream's release (which runs
            // the handlers of what it cancels), shows the result; callbacks registered meanwhile
            // wait for it.
            settlement.cancelHandlers = handlers
            settlement.needsDelivery = true
            isDelivering = true
            isCancelling = true
        }
        return settlement
    }

    /// Whether the promise was cancelled, its handlers run or not.
    @inlinable
    var isCancelled: Bool {
        if case .failure(APIError.cancelled)? = result { true } else { false }
    }

    /// The result as others may see it: none while the cancel's handlers run.
    @inlinable
    var shownResult: Result<Value, any Error>? { isCancelling ? nil : result }

    /// Adds a callback. Returns `true` when the caller must start a delivery loop because the
    /// promise has already settled and no loop is running.
    @inlinable
    mutating func register(_ callback: Callback<Value>, pinning: Bool = false, asDependent: Bool = false) -> Bool {
        if pinning { isPinned = true }
        if asDependent { dependents += 1 }
        callbacks.append(callback)
        guard result != nil, !isDelivering else { return false }
        isDelivering = true
        return true
    }

    /// Hands the waiting callbacks to the delivery loop, or ends the loop when there are none.
    @inlinable
    mutating func takeCallbacks() -> (InlineList<Callback<Value>>, Result<Value, any Error>)? {
        isCancelling = false
        guard let result, !callbacks.isEmpty else {
            isDelivering = false
            return nil
        }
        defer { callbacks = .none }
        return (callbacks, result)
    }

    /// One dependent stopped waiting. Returns `true` when the promise should now be cancelled.
    @inlinable
    mutating func releaseDependent() -> Bool {
        dependents -= 1
        return result == nil && dependents <= 0 && !isPinned
    }

    /// Starts waiting on `promise`. Returns `false` when this promise has settled already,
    /// in which case the caller releases `promise` at once.
    @inlinable
    mutating func wait(on promise: any Upstream) -> Bool {
        guard result == nil else { return false }
        upstream = promise
        return true
    }

    /// Adds a producer's cancellation handler. Returns `true` when it should run at once because
    /// the promise was cancelled already; after any other settlement it is dropped.
    @inlinable
    mutating func addCancelHandler(_ handler: @escaping @Sendable () -> Void) -> Bool {
        guard let result else {
            cancelHandlers.append(StoredAction(handler))
            return false
        }
        if case .failure(APIError.cancelled) = result { return true }
        return false
    }
}
