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
            throw APIError.timeout(.init(interval: timeout, heldTheMainQueue: Thread.isMainThread || DispatchQueue.getSpecific(key: mainQueue) != nil))
        }
        return try result.get()
    }
}

/// A mark on the main queue, which tells a block it runs there (the main actor's jobs too, which
/// a worker thread runs once the main thread calls `dispatchMain()`).
private let mainQueue: DispatchSpecificKey<Void> = {
    let key = DispatchSpecificKey<Void>()
    DispatchQueue.main.setSpecific(key: key, value: ())
    return key
}()
