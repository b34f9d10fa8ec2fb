import Foundation

extension Promise {
    /// Fails with ``APIError/timeout(_:)`` unless this promise settles within
    /// `interval` seconds; on time-out this promise is cancelled if nothing else waits for it.
    /// The time passes on `clock`, or in real time when it is `nil`.
    public func timeout(_ interval: TimeInterval, clock: (any APIClock)? = nil) -> Promise<Value> {
        let derived = makeDerived(of: Value.self)
        let timer = (clock ?? SystemClock.shared).schedule(after: interval) {
            derived.settle(.failure(APIError.timeout(.init(interval: interval, method: nil, url: nil))), releasingUpstream: true)
        }
        register(Callback(queue: nil) { result, loop in
            timer.cancel()
            derived.settle(result, in: &loop)
        }, asDependent: true)
        derived.onCancel { timer.cancel() }
        return derived
    }

    /// Passes the value on `interval` seconds after it arrives; errors pass on at once. The
    /// time passes on `clock`, or in real time when it is `nil`, so that code given an optional
    /// clock (a `TestClock` in its tests) passes it on as it is.
    public func delay(_ interval: TimeInterval, clock: (any APIClock)? = nil) -> Promise<Value> {
        let derived = makeDerived(of: Value.self)
        let clock = clock ?? SystemClock.shared
        register(Callback(queue: nil) { result, loop in
            guard case .success = result else { return derived.settle(result, in: &loop) }
            let timer = clock.schedule(after: interval) { derived.settle(result) }
            derived.onCancel { timer.cancel() }
        }, asDependent: true)
        return derived
    }

    /// Runs `attempt` until one of its promises succeeds, at most `attempts` times in all,
    /// waiting `delay` seconds between attempts (on `clock`, or in real time when it is `nil`);
    /// fails with the last attempt's error.
    ///
    /// Promises start their work when created, so a retry needs a closure that makes a new one.
    /// Cancelling the returned promise cancels the attempt in flight or the wait for the next.
    ///
    /// ```swift
    /// let user = Promise.retry(3, delay: 0.5) { api.user(id: 42) }
    /// ```
    public static func retry(
        _ attempts: Int,
        delay: TimeInterval = 0,
        clock: (any APIClock)? = nil,
        _ attempt: @escaping @Sendable () -> Promise<Value>
    ) -> Promise<Value> {
        attempt().recover(in: .global()) { error in
            guard attempts > 1 else { throw error }
            return Promise<Void>(value: ()).delay(delay, clock: clock).then(in: .global()) {
                retry(attempts - 1, delay: delay, clock: clock, attempt)
            }
        }
    }
}
