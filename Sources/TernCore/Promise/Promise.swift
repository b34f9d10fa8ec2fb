import Dispatch

/// A value that will be available later, or an error: what every Tern endpoint returns.
///
/// A promise settles exactly once. Callbacks registered with ``onSuccess(in:_:)``,
/// ``onError(in:_:)``, ``finally(in:_:)`` and the transforming steps (``then(in:_:)``,
/// ``map(in:_:)``, `recover(in:_:)`) run on the queue given to them, or else on the promise's
/// `queue`; never synchronously inside the call that registers them, and never while a lock
/// is held.
///
/// ```swift
/// api.user(id: 42)
///     .then(in: background) { user in api.favorites(of: user) }
///     .onSuccess { favorites in show(favorites) }
///     .onError { error in report(error) }
///     .finally { hideSpinner() }
///
/// let favorites = try await api.favorites(of: user).value
/// ```
///
/// ``cancel()`` settles the promise with ``APIError/cancelled``, runs the producer's
/// cancellation handlers (a network request stops), and cancels upstream promises that only
/// this chain was waiting for.
public final class Promise<Value: Sendable>: Sendable {
    /// The queue on which callbacks run when they are registered without one.
    ///
    /// Promises derived from this one inherit it; ``AbstractAPI`` sets it to its `responseQueue`.
    @usableFromInline package let queue: DispatchQueue

    @usableFromInline
    let state: LockedBox<PromiseState<Value>>

    /// The transfer progress of the request this promise comes from, if it comes from one.
    @usableFromInline
    let progress: ProgressChannel?

    @inlinable
    package init(queue: DispatchQueue, state: consuming PromiseState<Value>, progress: ProgressChannel? = nil) {
        self.queue = queue
        self.state = LockedBox(state)
        self.progress = progress
    }

    /// Creates a promise and runs `body` at once to start the work that settles it.
    ///
    /// Call `resolve` or `reject` from any thread, any number of times: only the first call
    /// counts. An error thrown by `body` rejects the promise. If both closures are released
    /// without either being called, the promise fails with ``APIError/PromiseFailure/abandoned``.
    ///
    /// ```swift
    /// let answer = Promise<Int> { resolve, reject in
    ///     DispatchQueue.global().async { resolve(42) }
    /// }
    /// ```
    @inlinable
    public convenience init(
        in queue: DispatchQueue = .main,
        _ body: (_ resolve: @escaping @Sendable (Value) -> Void,
                 _ reject: @escaping @Sendable (any Error) -> Void) throws -> Void
    ) {
        self.init(queue: queue, state: PromiseState())
        let resolver = Resolver(self)
        do {
            try body({ resolver.fulfill($0) }, { resolver.reject($0) })
        } catch {
            resolver.reject(error)
        }
    }

    /// Creates a promise that has already succeeded with `value`.
    @inlinable
    public convenience init(value: Value, in queue: DispatchQueue = .main) {
        self.init(queue: queue, state: PromiseState(result: .success(value)))
    }

    /// Creates a promise that has already failed with `error`.
    @inlinable
    public convenience init(error: any Error, in queue: DispatchQueue = .main) {
        self.init(queue: queue, state: PromiseState(result: .failure(error)))
    }

    /// Creates a pending promise together with the resolver that settles it.
    ///
    /// Use this when the work is started elsewhere, or when it can be cancelled:
    ///
    /// ```swift
    /// let (promise, resolver) = Promise<Data>.pending()
    /// let task = session.dataTask(with: url) { data, _, error in
    ///     if let data { resolver.fulfill(data) } else { resolver.reject(error ?? URLError(.unknown)) }
    /// }
    /// resolver.onCancel { task.cancel() }
    /// task.resume()
    /// ```
    @inlinable
    public static func pending(in queue: DispatchQueue = .main) -> (promise: Promise<Value>, resolver: Resolver) {
        let promise = Promise(queue: queue, state: PromiseState())
        return (promise, Resolver(promise))
    }

    /// Whether the promise has not settled yet. A cancel whose handlers still run has settled
    /// it, though ``currentResult`` does not show that yet.
    @inlinable
    package var isPending: Bool { state.withLock { $0.isPending } }

    /// The result if the promise has settled, `nil` while it is pending, and while the handlers
    /// of a cancel under way run.
    @inlinable
    public var currentResult: Result<Value, any Error>? { state.withLock { $0.shownResult } }

    /// Fails the promise with ``APIError/cancelled`` unless it has settled already.
    ///
    /// Runs the producer's cancellation handlers, which have run before anyone hears of the
    /// cancel, and releases the promises this one waits on, which are cancelled in turn when
    /// nothing else waits for them. Safe to call from any thread, any number of times.
    @inlinable
    public func cancel() {
        guard let settlement = state.withLock({ $0.cancel() }) else { return }
        carryOut(settlement)
    }

    // MARK: Settling

    /// Settles from outside any delivery loop. Returns `false` if the promise had settled already.
    @inlinable
    @discardableResult
    func settle(_ result: Result<Value, any Error>, releasingUpstream: Bool = false) -> Bool {
        guard let settlement = state.withLock({ $0.settle(result, releasingUpstream: releasingUpstream) }) else {
            return false
        }
        carryOut(settlement)
        return true
    }

    /// Settles from inside a delivery loop, which then delivers this promise too: a chain runs
    /// on one queue hop.
    @inlinable
    func settle(_ result: Result<Value, any Error>, in loop: inout DeliveryLoop) {
        if state.withLock({ $0.settle(result) })?.needsDelivery == true { loop.deliver(self) }
    }

    /// Runs the handlers a settlement calls for, releases the upstream chain (cancelling what
    /// nothing else waits for), then delivers: whoever hears of a cancel finds what it caused.
    @inlinable
    func carryOut(_ settlement: PromiseState<Value>.Settlement) {
        settlement.cancelHandlers.forEach { $0.run() }
        Self.release(settlement.releasedUpstream)
        if settlement.needsDelivery { DeliveryLoop.run(self, on: nil) }
    }

    /// Releases `upstream`, then whatever that cancels in turn, one promise at a time: a chain
    /// of any length is cancelled in flat stack depth, as delivery runs it. Those cancelled are
    /// heard last to first, each once what it cancelled has stopped.
    @inlinable
    static func release(_ upstream: (any Upstream)?) {
        var next = upstream
        var cancelled: [any Upstream] = []
        while let promise = next {
            let released = promise.releaseInterest()
            if released.delivers { cancelled.append(promise) }
            next = released.upstream
        }
        for promise in cancelled.reversed() { promise.deliverCancel() }
    }

    /// Registers a producer's cancellation handler; it runs at once if the promise is already cancelled.
    @inlinable
    func onCancel(_ handler: @escaping @Sendable () -> Void) {
        if state.withLock({ $0.addCancelHandler(handler) }) { handler() }
    }

    // MARK: Registering

    /// Registers a callback from outside a delivery loop. On a settled promise the delivery loop
    /// starts here, and dispatches every callback that has a queue: user code never runs inside
    /// the call that registered it.
    @inlinable
    package func register(_ callback: Callback<Value>, pinning: Bool = false, asDependent: Bool = false) {
        if state.withLock({ $0.register(callback, pinning: pinning, asDependent: asDependent) }) {
            DeliveryLoop.run(self, on: nil)
        }
    }

    /// Makes `derived` wait on this promise: `body` settles it, inside the delivery loop.
    @inlinable
    func attach<Derived>(
        _ derived: Promise<Derived>,
        on queue: DispatchQueue?,
        _ body: @escaping @Sendable (Result<Value, any Error>, inout DeliveryLoop) -> Void
    ) -> Promise<Derived> {
        register(Callback(queue: queue ?? self.queue, body: body), asDependent: true)
        return derived
    }

    /// Creates a pending promise that waits on this one and inherits its queue and progress.
    @inlinable
    func makeDerived<Derived>(of type: Derived.Type = Derived.self) -> Promise<Derived> {
        Promise<Derived>(queue: queue, state: PromiseState(upstream: self), progress: progress)
    }

    /// A promise of its own on this one's result, settled where this one settles, with no hop:
    /// a handle on a shared load for one caller, whose cancelling releases only its interest.
    /// It runs none of the app's code, so it needs no queue: one nobody services (a server's
    /// main queue) must not hold it up.
    @inlinable
    package func passedOn() -> Promise<Value> {
        let derived = makeDerived(of: Value.self)
        register(Callback(queue: nil) { result, loop in derived.settle(result, in: &loop) }, asDependent: true)
        return derived
    }

    /// Makes this pending promise take the result of `other`, from inside a delivery loop.
    @inlinable
    func follow(_ other: Promise<Value>, in loop: inout DeliveryLoop) {
        if other === self { return settle(.failure(APIError.promise(.resolvedWithItself)), in: &loop) }
        guard state.withLock({ $0.wait(on: other) }) else { return Self.release(other) }
        let callback = Callback<Value>(queue: nil) { [self] result, loop in settle(result, in: &loop) }
        if other.state.withLock({ $0.register(callback, asDependent: true) }) { loop.deliver(other) }
    }
}

extension Promise: Deliverable {
    @inlinable
    func deliver(in loop: inout DeliveryLoop) {
        while let (callbacks, result) = state.withLock({ $0.takeCallbacks() }) {
            callbacks.forEach { callback in
                guard let queue = callback.queue, queue !== loop.queue else {
                    return callback.run(result, in: &loop)
                }
                MainQueueWatch.main.noteHop(to: queue)
                queue.async {
                    var hop = DeliveryLoop(queue: queue)
                    callback.run(result, in: &hop)
                    hop.finish()
                }
            }
        }
    }
}

extension Promise: Upstream {
    @inlinable
    func releaseInterest() -> (upstream: (any Upstream)?, delivers: Bool) {
        guard state.withLock({ $0.releaseDependent() }), let settlement = state.withLock({ $0.cancel() }) else {
            return (nil, false)
        }
        settlement.cancelHandlers.forEach { $0.run() }
        return (settlement.releasedUpstream, settlement.needsDelivery)
    }

    @inlinable
    func deliverCancel() {
        DeliveryLoop.run(self, on: nil)
    }
}
