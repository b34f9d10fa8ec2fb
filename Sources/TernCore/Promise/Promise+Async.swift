import Dispatch

extension Promise {
    /// Creates a promise settled by an async operation; cancelling the promise cancels its Task.
    ///
    /// ```swift
    /// let size = Promise { try await storage.size(of: file) }
    /// ```
    @inlinable
    public convenience init(in queue: DispatchQueue = .main, _ operation: @escaping @Sendable () async throws -> Value) {
        self.init(queue: queue, state: PromiseState())
        let task = Task { [self] in
            do {
                settle(.success(try await operation()))
            } catch {
                settle(.failure(error))
            }
        }
        onCancel { task.cancel() }
    }

    /// The value, once the promise succeeds; throws its error otherwise.
    ///
    /// Cancelling the awaiting Task cancels the promise. Needs no queue to be serviced, so it
    /// works in command-line tools and servers as well as in apps.
    @inlinable
    public var value: Value {
        get async throws { try await result.get() }
    }

    /// The result, once the promise settles; cancelling the awaiting Task cancels the promise.
    @inlinable
    public var result: Result<Value, any Error> {
        get async {
            // Settled already: no continuation, no suspension.
            if let result = currentResult { return result }
            return await withTaskCancellationHandler {
                // Unsafe is sound here: the state machine runs each callback exactly once.
                await withUnsafeContinuation { continuation in
                    // Resumed from whichever thread settles the promise, with no hop.
                    register(Callback(resuming: continuation), pinning: true)
                }
            } onCancel: {
                cancel()
            }
        }
    }
}
