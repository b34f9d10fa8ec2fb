import Dispatch

/// A promise that has settled and may have callbacks waiting to run.
@usableFromInline
protocol Deliverable: AnyObject, Sendable {
    /// Runs the waiting callbacks: those bound to the loop's queue (or to no queue) right here,
    /// the others by dispatching to their own queue.
    func deliver(in loop: inout DeliveryLoop)
}

/// One registered reaction to a promise's result.
@usableFromInline
package struct Callback<Value: Sendable>: Sendable {
    /// What a callback does with the result.
    @usableFromInline
    enum Action: Sendable {
        /// Runs a closure; a promise it settles is handed to the loop for delivery.
        case run(@Sendable (Result<Value, any Error>, inout DeliveryLoop) -> Void)
        /// Resumes an awaiting Task, with no closure to allocate around the continuation.
        case resume(UnsafeContinuation<Result<Value, any Error>, Never>)
    }

    /// Where the action runs; `nil` for Tern's own bookkeeping, which may run on any thread.
    /// User code always has a queue.
    @usableFromInline
    let queue: DispatchQueue?
    @usableFromInline
    let action: Action

    @inlinable
    package init(queue: DispatchQueue?, body: @escaping @Sendable (Result<Value, any Error>, inout DeliveryLoop) -> Void) {
        self.queue = queue
        self.action = .run(body)
    }

    /// A bookkeeping callback that resumes `continuation` from whichever thread settles the promise.
    @inlinable
    init(resuming continuation: UnsafeContinuation<Result<Value, any Error>, Never>) {
        self.queue = nil
        self.action = .resume(continuation)
    }

    /// Reacts to the result.
    @inlinable
    func run(_ result: Result<Value, any Error>, in loop: inout DeliveryLoop) {
        switch action {
        case .run(let body): body(result, &loop)
        case .resume(let continuation): continuation.resume(returning: result)
        }
    }
}

/// Runs the callbacks of settled promises on one thread, for as long as they are bound to the
/// queue that thread serves.
///
/// A callback that settles another promise delivers it at once, nested, so a chain runs on one
/// queue hop through code the compiler has specialized. Past ``maxDepth`` nested deliveries the
/// promise waits in a backlog instead, so a chain of any length runs in bounded stack depth.
@usableFromInline
package struct DeliveryLoop {
    /// The queue whose thread runs this loop; `nil` for a thread that belongs to no queue of ours.
    @usableFromInline
    let queue: DispatchQueue?
    @usableFromInline
    var depth = 0
    @usableFromInline
    var backlog: [any Deliverable] = []

    @usableFromInline
    static var maxDepth: Int { 32 }

    @inlinable
    init(queue: DispatchQueue?) {
        self.queue = queue
    }

    /// Delivers `promise` now, or later in this loop when the stack is deep enough already.
    @inlinable
    mutating func deliver<Value>(_ promise: Promise<Value>) {
        guard depth < Self.maxDepth else { return backlog.append(promise) }
        depth += 1
        promise.deliver(in: &self)
        depth -= 1
    }

    /// Delivers what waited in the backlog, and what that delivery settles in turn.
    @inlinable
    mutating func finish() {
        while let next = backlog.popLast() {
            next.deliver(in: &self)
        }
    }

    /// Delivers `promise` and everything its callbacks settle, from a thread running on `queue`.
    @inlinable
    static func run<Value>(_ promise: Promise<Value>, on queue: DispatchQueue?) {
        var loop = DeliveryLoop(queue: queue)
        loop.deliver(promise)
        loop.finish()
    }
}
