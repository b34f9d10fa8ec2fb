import Dispatch

// The steps of a chain. Each transforming step returns a new promise that waits on this one;
// each side effect returns this promise, so the chain reads top to bottom.
extension Promise {
    /// Continues with the promise that `body` returns for the value (a flatMap).
    ///
    /// Errors skip `body` and pass down the chain; an error thrown by `body` fails the result.
    ///
    /// ```swift
    /// api.requestUser().then(api.favorites(of:))
    /// ```
    public func then<Next>(
        in queue: DispatchQueue? = nil,
        _ body: @escaping @Sendable (Value) throws -> Promise<Next>
    ) -> Promise<Next> {
        let derived = makeDerived(of: Next.self)
        return attach(derived, on: queue) { result in
            switch result {
            case .success(let value):
                do {
                    return derived.follow(try body(value))
                } catch {
                    return derived.settleInLoop(.failure(error))
                }
            case .failure(let error):
                return derived.settleInLoop(.failure(error))
            }
        }
    }

    /// Transforms the value; an error thrown by `transform` fails the result.
    public func map<Next>(
        in queue: DispatchQueue? = nil,
        _ transform: @escaping @Sendable (Value) throws -> Next
    ) -> Promise<Next> {
        let derived = makeDerived(of: Next.self)
        return attach(derived, on: queue) { result in
            derived.settleInLoop(result.flatMap { value in Result { try transform(value) } })
        }
    }

    /// Turns an error into a value; cancellation is not recovered and passes on.
    ///
    /// Throw from `body` to keep the promise failed, with the same or another error.
    public func recover(
        in queue: DispatchQueue? = nil,
        _ body: @escaping @Sendable (any Error) throws -> Value
    ) -> Promise<Value> {
        let derived = makeDerived(of: Value.self)
        return attach(derived, on: queue) { result in
            guard case .failure(let error) = result, !Self.isCancellation(error) else {
                return derived.settleInLoop(result)
            }
            return derived.settleInLoop(Result { try body(error) })
        }
    }

    /// Turns an error into another promise, such as a second attempt elsewhere; cancellation
    /// is not recovered and passes on.
    public func recover(
        in queue: DispatchQueue? = nil,
        _ body: @escaping @Sendable (any Error) throws -> Promise<Value>
    ) -> Promise<Value> {
        let derived = makeDerived(of: Value.self)
        return attach(derived, on: queue) { result in
            guard case .failure(let error) = result, !Self.isCancellation(error) else {
                return derived.settleInLoop(result)
            }
            do {
                return derived.follow(try body(error))
            } catch {
                return derived.settleInLoop(.failure(error))
            }
        }
    }

    /// Fails with ``PromiseError/validationFailed`` when `predicate` returns `false`, or with
    /// the error it throws.
    public func validate(
        in queue: DispatchQueue? = nil,
        _ predicate: @escaping @Sendable (Value) throws -> Bool
    ) -> Promise<Value> {
        map(in: queue) { value in
            guard try predicate(value) else { throw PromiseError.validationFailed }
            return value
        }
    }

    /// Runs `body` whatever the outcome, then settles with the same result: unlike
    /// ``finally(in:_:)``, the next step waits for `body`.
    public func ensure(
        in queue: DispatchQueue? = nil,
        _ body: @escaping @Sendable () -> Void
    ) -> Promise<Value> {
        let derived = makeDerived(of: Value.self)
        return attach(derived, on: queue) { result in
            body()
            return derived.settleInLoop(result)
        }
    }

    /// Runs `body` with the value when the promise succeeds.
    @discardableResult
    public func onSuccess(
        in queue: DispatchQueue? = nil,
        _ body: @escaping @Sendable (Value) -> Void
    ) -> Promise<Value> {
        observe(in: queue) { result in
            if case .success(let value) = result { body(value) }
        }
    }

    /// Runs `body` with the error when the promise fails, cancellation included.
    @discardableResult
    public func onError(
        in queue: DispatchQueue? = nil,
        _ body: @escaping @Sendable (any Error) -> Void
    ) -> Promise<Value> {
        observe(in: queue) { result in
            if case .failure(let error) = result { body(error) }
        }
    }

    /// Runs `body` when the promise settles, whatever the outcome.
    @discardableResult
    public func finally(
        in queue: DispatchQueue? = nil,
        _ body: @escaping @Sendable () -> Void
    ) -> Promise<Value> {
        observe(in: queue) { _ in body() }
    }

    /// Runs `body` with the result when the promise settles.
    @discardableResult
    public func onResult(
        in queue: DispatchQueue? = nil,
        _ body: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) -> Promise<Value> {
        observe(in: queue, body)
    }

    /// Registers a side effect. It pins the promise: something now waits for this very
    /// promise, so dependents going away will not cancel it.
    private func observe(
        in queue: DispatchQueue?,
        _ body: @escaping @Sendable (Result<Value, any Error>) -> Void
    ) -> Promise<Value> {
        register(Callback(queue: queue ?? self.queue) { result in
            body(result)
            return nil
        }, pinning: true)
        return self
    }

    static func isCancellation(_ error: any Error) -> Bool {
        (error as? PromiseError)?.isCancellation == true
    }
}
