import Dispatch
import Foundation
import Tern

extension Promise {
    /// Blocks the calling thread until the promise settles, for synchronous tests and scripts.
    ///
    /// Never call it on the queue the promise delivers to: on the main queue, a step of the
    /// chain on the main queue (an `AbstractAPI`'s default `responseQueue`) waits for `wait()`
    /// to return, and the timeout says so. Fails with `APIError.timeout` if the promise is still
    /// pending after `timeout` seconds.
    ///
    /// - Throws: The promise's error, or `APIError.timeout`.
    public func wait(timeout: TimeInterval = 10) throws -> Value {
        let settled = DispatchSemaphore(value: 0)
        onResult(in: .global()) { _ in settled.signal() }
        guard settled.wait(timeout: .now() + timeout) == .success, let result = currentResult else {
            throw APIError.timeout(.init(interval: timeout, heldTheMainQueue: Thread.isMainThread || MainQueueWatch.main.isCurrent))
        }
        return try result.get()
    }
}
