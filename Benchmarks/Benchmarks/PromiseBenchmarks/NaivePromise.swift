import Dispatch
import Foundation

/// The floor Tern's promise is measured against: the simplest promise one would write by hand.
/// An NSLock, an enum state, an array of callbacks, a new promise per step, and every callback
/// dispatched to its queue.
final class NaivePromise<Value: Sendable>: @unchecked Sendable {
    private enum State {
        case pending([@Sendable (Value) -> Void])
        case fulfilled(Value)
    }

    private let lock = NSLock()
    private var state = State.pending([])
    private let queue: DispatchQueue

    init(queue: DispatchQueue) {
        self.queue = queue
    }

    func fulfill(_ value: Value) {
        lock.lock()
        guard case .pending(let callbacks) = state else {
            lock.unlock()
            return
        }
        state = .fulfilled(value)
        lock.unlock()
        for callback in callbacks {
            queue.async { callback(value) }
        }
    }

    func onSuccess(_ body: @escaping @Sendable (Value) -> Void) {
        lock.lock()
        switch state {
        case .pending(var callbacks):
            callbacks.append(body)
            state = .pending(callbacks)
            lock.unlock()
        case .fulfilled(let value):
            lock.unlock()
            queue.async { body(value) }
        }
    }

    func map<Next: Sendable>(_ transform: @escaping @Sendable (Value) -> Next) -> NaivePromise<Next> {
        let next = NaivePromise<Next>(queue: queue)
        onSuccess { next.fulfill(transform($0)) }
        return next
    }
}

/// The same floor with callbacks run inline on the settling thread: no queue hop at all.
/// It is not Zalgo-safe, so it shows the cost of the promise bookkeeping alone.
final class InlineNaivePromise<Value: Sendable>: @unchecked Sendable {
    private enum State {
        case pending([@Sendable (Value) -> Void])
        case fulfilled(Value)
    }

    private let lock = NSLock()
    private var state = State.pending([])

    func fulfill(_ value: Value) {
        lock.lock()
        guard case .pending(let callbacks) = state else {
            lock.unlock()
            return
        }
        state = .fulfilled(value)
        lock.unlock()
        for callback in callbacks { callback(value) }
    }

    func onSuccess(_ body: @escaping @Sendable (Value) -> Void) {
        lock.lock()
        switch state {
        case .pending(var callbacks):
            callbacks.append(body)
            state = .pending(callbacks)
            lock.unlock()
        case .fulfilled(let value):
            lock.unlock()
            body(value)
        }
    }

    func map<Next: Sendable>(_ transform: @escaping @Sendable (Value) -> Next) -> InlineNaivePromise<Next> {
        let next = InlineNaivePromise<Next>()
        onSuccess { next.fulfill(transform($0)) }
        return next
    }
}

/// The smallest awaitable future: a lock, a value and one waiting continuation. The same shape
/// as the Tern bridge benchmark (resolved from another thread, started before the await), so
/// that the comparison isolates what Tern itself costs.
final class MinimalFuture: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Int?
    private var waiter: CheckedContinuation<Int, Never>?

    func fulfill(_ newValue: Int) {
        lock.lock()
        value = newValue
        let waiting = waiter
        waiter = nil
        lock.unlock()
        waiting?.resume(returning: newValue)
    }

    private func register(_ continuation: CheckedContinuation<Int, Never>) {
        lock.lock()
        if let value {
            lock.unlock()
            continuation.resume(returning: value)
        } else {
            waiter = continuation
            lock.unlock()
        }
    }

    var result: Int {
        get async { await withCheckedContinuation { register($0) } }
    }
}
