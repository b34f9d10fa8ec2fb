import Dispatch

// The steps of a chain. Each step, transforming or side effect, returns a new promise that
// waits on this one and settles once the step has run, so the chain runs top to bottom.
extension Promise {
    /// Continues with the promise that `body` returns for the value (a flatMap).
    ///
    /// Errors skip `body` and pass down the chain; an error thrown by `body` fails the result.
    ///
    /// ```swift
    /// api.requestUser().then(api.favorites(of:))
    /// ```
    @inlinable
    public func then<Next>(
        in queue: DispatchQueue? = nil,
        _ body: @escaping @Sendable (Value) throws -> Promise<Next>
    ) -> Promise<Next> {
        let derived = makeDerived(of: Next.self)
        return attach(derived, on: queue) { result, loop in
            switch result {
            case .success(let value):
                do {
                    derived.follow(try body(value), in: &loop)
                } catch {
                    derived.settle(.failure(error), in: &loop)
                }
            case .failure(let error):
                derived.settle(.failure(error), in: &loop)
            }
        }
    }

    /// Transforms the value; an error thrown by `transform` fails the result.
    @inlinable
    public func map<Next>(
        in queue: DispatchQueue? = nil,
        _ transform: @escaping @Sendable (Value) throws -> Next
    ) -> Promise<Next> {
        let derived = makeDerived(of: Next.self)
        return attach(derived, on: queue) { result, loop in
            derived.settle(result.flatMap { value in Result { try transform(value) } }, in: &loop)
        }
    }

    /// Turns an error into a value; cancellation is not recovered and passes on.
    ///
    /// Throw from `body` to keep the promise failed, with the same or another error.
    @inlinable
    public func recover(
        in queue: DispatchQueue? = nil,
        _ body: @escaping @Sendable (any Error) throws -> Value
    ) -> Promise<Value> {
        let derived = makeDerived(of: Value.self)
        return attach(derived, on: queue) { result, loop in
            guard case .failure(let error) = result, !Self.isCancellation(error) else {
                return derived.settle(result, in: &loop)
            }
            derived.settle(Result { try body(error) }, in: &loop)
        }
    }

    /// Turns an error into another promise, such as a second attempt elsewhere; cancellation
    /// is not recovered and passes on.
    @inlinable
    @_disfavoredOverload   // a body that only throws, `{ throw AppError($0) }`, means the other
    public func recover(
        in queue: DispatchQueue? = nil,
        _ body: @escaping @Sendable (any Error) throws -> Promise<Value>
    ) -> Promise<Value> {
        let derived = makeDerived(of: Value.self)
        return attach(derived, on: queue) { result, loop in
            guard case .failure(let error) = result, !Self.isCancellation(error) else {
                return derived.settle(result, in: &loop)
            }
            do {
                derived.follow(try body(error), in: &loop)
            } catch {
                derived.settle(.failure(error), in: &loop)
            }
        }
    }

    /// Fails with ``APIError/PromiseFailure/validationFailed`` when `predicate` returns `false`, or with
    /// the error it throws.
    @inlinable
    package func validate(
        in queue: DispatchQueue? = nil,
        _ predicate: @escaping @Sendable (Value) throws -> Bool
    ) -> Promise<Value> {
        map(in: queue) { value in
            guard try predicate(value) else { throw APIError.promise(.validationFailed) }
            return value
        }
    }

    /// Runs `body` with the value when the promise succeeds.
    ///
    /// Returns a promise with the same result that settles once `body` has returned, so the
    /// steps written after it run after it, whatever queues they run on.
    @discardableResult
    @inlinable
    public func onSuccess(
        in queue: DispatchQueue? = nil,
        _ body: @escaping @Sendable (Value) -> Void
    ) -> Promise<Value> {
        observe(in: queue) { result in
            if case .success(let value) = result { body(value) }
        }
    }

    /// Runs `body` with the error when the promise fails, cancellation included.
    ///
    /// Returns a promise with the same result that settles once `body` has returned.
    @discardableResult
    @inlinable
    public func onError(
        in queue: DispatchQueue? = nil,
        _ body: @escaping @Sendable (any Error) -> Void
    ) -> Promise<Value> {
        observe(in: queue) { result in
            if case .failure(let error) = result { body(error) }
        }
    }

    /// Runs `body` when the promise settles, whatever the outcome.
    ///
    /// Returns a promise with the same result that settles once `body` has returned.
    @discardableResult
    @inlinable
    public func finally(
        in queue: DispatchQueue? = nil,
        _ body: @escaping @Sendable () -> Void
    ) -> Promise<Value> {
        observe(in: queue) { _ in body() }
    }

    /// Runs `body` with the result when the promise settles.
    ///
    /// Returns a promise with the same result that settles once `body` has returned.
    @discardableResult
    @inlinable
    public func onResult(
        in queue: DispatchQueue? = nil,
        _ body: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) -> Promise<Value> {
        observe(in: queue, body)
    }

    /// Registers a side effect, and returns the promise that passes the result on once the side
    /// effect has returned: a chain's steps run in the order written, on any queues.
    ///
    /// The side effect waits on this promise as a dependent, like a transforming step: this
    /// promise is cancelled on its behalf only when what it returns is cancelled and nothing
    /// else waits.
    @inlinable
    func observe(
        in queue: DispatchQueue?,
        _ body: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) -> Promise<Value> {
        let derived = makeDerived(of: Value.self)
        return attach(derived, on: queue) { result, loop in
            body(result)
            derived.settle(result, in: &loop)
        }
    }

    @inlinable
    package static func isCancellation(_ error: any Error) -> Bool {
        (error as? APIError)?.isCancellation == true
    }
}
