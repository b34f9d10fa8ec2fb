extension Promise {
    /// Settles its promise: the producer's side of a ``Promise``.
    ///
    /// Any thread may call it, any number of times; only the first settlement counts.
    /// Releasing the last reference to a resolver that never settled its promise fails the
    /// promise with ``APIError/PromiseFailure/abandoned``, so no promise waits forever for a producer
    /// that is gone.
    public final class Resolver: Sendable {
        @usableFromInline
        let promise: Promise<Value>
        /// Raised after this resolver settles the promise; spares `deinit` the promise's lock.
        @usableFromInline
        let settled = SettledHint()

        @inlinable
        package init(_ promise: Promise<Value>) {
            self.promise = promise
        }

        deinit {
            // Almost always settled by now, by this resolver: its hint says so without the
            // promise's lock, which `deinit` (unspecialized, often on another core) pays dearly for.
            if !settled.isRaised { abandonIfPending() }
        }

        /// Fails the promise as abandoned unless it has settled. Kept out of `deinit`, which is
        /// compiled generically: there the failure's type would be looked up on every release.
        @inline(never)
        private func abandonIfPending() {
            if promise.isPending { promise.settle(.failure(APIError.promise(.abandoned))) }
        }

        /// Settles the promise with `value`.
        @inlinable
        public func fulfill(_ value: Value) {
            promise.settle(.success(value))
            settled.raise()
        }

        /// Settles the promise with `value` unless it has settled already (a cancel came
        /// first): whether it did.
        @inlinable
        package func fulfillIfPending(_ value: Value) -> Bool {
            defer { settled.raise() }
            return promise.settle(.success(value))
        }

        /// Settles the promise with `error`.
        @inlinable
        public func reject(_ error: any Error) {
            promise.settle(.failure(error))
            settled.raise()
        }

        /// Settles the promise with `result`.
        @inlinable
        public func resolve(_ result: Result<Value, any Error>) {
            promise.settle(result)
            settled.raise()
        }

        /// Whether the promise was cancelled; long work can check it to stop early.
        @inlinable
        public var isCancelled: Bool {
            promise.state.withLock { $0.isCancelled }
        }

        /// Runs `handler` when the promise is cancelled, at once if it already was.
        ///
        /// This is how cancellation reaches the work: cancel the network task, the timer, the
        /// child promise here.
        @inlinable
        public func onCancel(_ handler: @escaping @Sendable () -> Void) {
            promise.onCancel(handler)
        }
    }
}

extension Promise.Resolver where Value == Void {
    /// Settles a `Promise<Void>` successfully.
    @inlinable
    public func fulfill() {
        fulfill(())
    }
}
