import Dispatch

extension Promise {
    /// Succeeds with every value, in the order given, once all succeed; fails with the first
    /// error, and then cancels the others that nothing else waits for.
    ///
    /// Delivered on `queue`, or by default where the first of `promises` delivers (an API's
    /// response queue), as a step of a chain is: never on a queue nothing named, which a program
    /// whose main thread waits would never reach.
    @inlinable
    public static func all(_ promises: [Promise<Value>], in queue: DispatchQueue? = nil) -> Promise<[Value]> {
        guard let leading = promises.first else { return Promise<[Value]>(value: [], in: queue ?? .global()) }
        let combined = Promise<[Value]>(queue: queue ?? leading.queue, state: PromiseState())
        let values = Collector<Value>(count: promises.count)
        let failure = FirstClaim()
        let releaseAll: @Sendable () -> Void = { promises.forEach { release($0) } }
        for (index, promise) in promises.enumerated() {
            promise.register(Callback(queue: nil) { result, loop in
                switch result {
                case .success(let value):
                    if let all = values.store(value, at: index) { combined.settle(.success(all), in: &loop) }
                case .failure(let error):
                    // The others are cancelled before the failure is heard, so that what runs on
                    // it never finds one still pending.
                    guard failure.claim() else { return }
                    releaseAll()
                    combined.settle(.failure(error))
                }
            }, asDependent: true)
        }
        combined.onCancel(releaseAll)
        return combined
    }

    /// Runs the work at most `maxConcurrent` at a time, starting each as a slot frees up, and
    /// succeeds with every value in the order given. On the first error, or on cancellation,
    /// nothing more starts and the running work is cancelled.
    ///
    /// Delivered on `queue`, or by default where the first work's promise delivers.
    @inlinable
    public static func all(
        maxConcurrent: Int,
        in queue: DispatchQueue? = nil,
        _ work: [@Sendable () -> Promise<Value>]
    ) -> Promise<[Value]> {
        guard let makeFirst = work.first else { return Promise<[Value]>(value: [], in: queue ?? .global()) }
        let first = makeFirst()
        let (combined, resolver) = Promise<[Value]>.pending(in: queue ?? first.queue)
        let run = ThrottledRun(work: work, resolver: resolver)
        resolver.onCancel { run.stop() }
        run.start(first)
        for _ in 1..<max(1, min(maxConcurrent, work.count)) { run.startNext() }
        return combined
    }

    /// Settles like the first of `promises` to settle, then cancels the others that nothing
    /// else waits for. Fails with ``APIError/PromiseFailure/noPromises`` when given none.
    ///
    /// Delivered on `queue`, or by default where the first of `promises` delivers.
    @inlinable
    public static func race(_ promises: [Promise<Value>], in queue: DispatchQueue? = nil) -> Promise<Value> {
        guard let leading = promises.first else { return Promise(error: APIError.promise(.noPromises), in: queue ?? .global()) }
        let winner = Promise(queue: queue ?? leading.queue, state: PromiseState())
        let first = FirstClaim()
        let releaseAll: @Sendable () -> Void = { promises.forEach { release($0) } }
        for promise in promises {
            promise.register(Callback(queue: nil) { result, _ in
                // The losers are cancelled before the winner is heard.
                guard first.claim() else { return }
                releaseAll()
                winner.settle(result)
            }, asDependent: true)
        }
        winner.onCancel(releaseAll)
        return winner
    }

    /// Succeeds with the first of `promises` to succeed, then cancels the others that nothing
    /// else waits for. Fails with ``APIError/PromiseFailure/allFailed(_:)`` when every one fails.
    ///
    /// Delivered on `queue`, or by default where the first of `promises` delivers.
    @inlinable
    public static func any(_ promises: [Promise<Value>], in queue: DispatchQueue? = nil) -> Promise<Value> {
        guard let leading = promises.first else { return Promise(error: APIError.promise(.allFailed([])), in: queue ?? .global()) }
        let winner = Promise(queue: queue ?? leading.queue, state: PromiseState())
        let errors = Collector<any Error>(count: promises.count)
        let first = FirstClaim()
        let releaseAll: @Sendable () -> Void = { promises.forEach { release($0) } }
        for (index, promise) in promises.enumerated() {
            promise.register(Callback(queue: nil) { result, loop in
                switch result {
                case .success:
                    // The losers are cancelled before the winner is heard.
                    guard first.claim() else { return }
                    releaseAll()
                    winner.settle(result)
                case .failure(let error):
                    if let all = errors.store(error, at: index) {
                        winner.settle(.failure(APIError.promise(.allFailed(all))), in: &loop)
                    }
                }
            }, asDependent: true)
        }
        winner.onCancel(releaseAll)
        return winner
    }
}

/// Says yes to the first caller only: which settlement of several wins, decided before the
/// losers are cancelled and the winner is settled.
@usableFromInline
final class FirstClaim: Sendable {
    @usableFromInline
    let claimed = Locked(false)

    @inlinable
    init() {}

    /// Whether this is the first call.
    @inlinable
    func claim() -> Bool {
        claimed.withLock { claimed in
            defer { claimed = true }
            return !claimed
        }
    }
}

/// Gathers one item per slot and hands back all of them, in slot order, with the last one.
@usableFromInline
final class Collector<Item: Sendable>: Sendable {
    @usableFromInline
    let state: Locked<(items: [Item?], remaining: Int)>

    @inlinable
    init(count: Int) {
        state = Locked((Array(repeating: nil, count: count), count))
    }

    /// Stores `item`; returns every item once all slots are filled.
    @inlinable
    func store(_ item: Item, at index: Int) -> [Item]? {
        state.withLock { state in
            state.items[index] = item
            state.remaining -= 1
            return state.remaining == 0 ? state.items.map { $0! } : nil
        }
    }
}

/// Starts lazily created work a slot at a time for ``Promise/all(maxConcurrent:in:_:)``.
@usableFromInline
final class ThrottledRun<Value: Sendable>: Sendable {
    @usableFromInline
    struct State: Sendable {
        var nextIndex = 0
        var isStopped = false
        var running: [Int: Promise<Value>] = [:]
    }

    let work: [@Sendable () -> Promise<Value>]
    let resolver: Promise<[Value]>.Resolver
    let values: Collector<Value>
    let state = Locked(State())

    @usableFromInline
    init(work: [@Sendable () -> Promise<Value>], resolver: Promise<[Value]>.Resolver) {
        self.work = work
        self.resolver = resolver
        self.values = Collector(count: work.count)
    }

    /// Runs on with the first piece of work, made already (its promise says where the run delivers).
    @usableFromInline
    func start(_ first: Promise<Value>) {
        state.withLock { $0.nextIndex = 1 }
        watch(first, at: 0)
    }

    /// Starts the next piece of work, if any is left and the run goes on.
    @usableFromInline
    func startNext() {
        let index: Int? = state.withLock { state in
            guard !state.isStopped, state.nextIndex < work.count else { return nil }
            defer { state.nextIndex += 1 }
            return state.nextIndex
        }
        guard let index else { return }
        watch(work[index](), at: index)
    }

    private func watch(_ promise: Promise<Value>, at index: Int) {
        // Stopped while the work was being made (a cancel from another thread): `stop()` could
        // not cancel what it did not know of yet, and nothing waits for it now.
        let stopped = state.withLock { state in
            if !state.isStopped { state.running[index] = promise }
            return state.isStopped
        }
        if stopped { return promise.cancel() }
        promise.onResult(in: .global()) { [self] result in
            state.withLock { _ = $0.running.removeValue(forKey: index) }
            switch result {
            case .success(let value):
                if let all = values.store(value, at: index) { return resolver.fulfill(all) }
                startNext()
            case .failure(let error):
                // The first failure stops the run, and what runs is cancelled before it is heard,
                // as `all` does; their own failures (cancelled) come after, unheard.
                guard let running = halt() else { return }
                running.forEach { $0.cancel() }
                resolver.reject(error)
            }
        }
    }

    /// Starts nothing more and cancels what runs.
    @usableFromInline
    func stop() {
        halt()?.forEach { $0.cancel() }
    }

    /// Stops the run, once: the work still running, or `nil` when it had stopped already.
    private func halt() -> [Promise<Value>]? {
        state.withLock { state in
            guard !state.isStopped else { return nil }
            state.isStopped = true
            defer { state.running = [:] }
            return Array(state.running.values)
        }
    }
}
