import Foundation

// Streams without `async`: a callback per element on a queue, and a promise for the end.

extension ResponseStream {
    /// Calls `body` with each chunk, in order, on `queue` (a serial one), the next chunk only
    /// once `body` has returned; the promise settles when the body ends, fails with the
    /// ``APIError`` that ended it, and cancelling it stops the transfer.
    ///
    public func forEach(on queue: DispatchQueue = .main, _ body: @escaping @Sendable (Data) -> Void) -> Promise<Void> {
        deliverEach(of: self, on: queue, body)
    }
}

extension ResponseSequence {
    /// Calls `body` with each value on `queue`, an event source's across its connections: see
    /// ``ResponseStream/forEach(on:_:)``.
    public func forEach(on queue: DispatchQueue = .main, _ body: @escaping @Sendable (Element) -> Void) -> Promise<Void> {
        deliverEach(of: self, on: queue, body)
    }
}

/// Iterates `sequence` in a task of its own, handing each element to `body` on `queue` and
/// waiting for it; settles the promise with the end.
private func deliverEach<Sequence: AsyncSequence & Sendable>(
    of sequence: Sequence, on queue: DispatchQueue, _ body: @escaping @Sendable (Sequence.Element) -> Void
) -> Promise<Void> where Sequence.Element: Sendable {
    let (promise, resolver) = Promise<Void>.pending(in: queue)
    let task = Task {
        do {
            for try await element in sequence {
                await withCheckedContinuation { (delivered: CheckedContinuation<Void, Never>) in
                    queue.async {
                        body(element)
                        delivered.resume()
                    }
                }
            }
            resolver.fulfill()
        } catch let error as APIError {
            resolver.reject(error)
        } catch {
            resolver.reject(APIError.cancelled)
        }
    }
    resolver.onCancel { task.cancel() }
    return promise
}
