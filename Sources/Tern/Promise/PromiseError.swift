import Foundation

/// Why a promise failed when the failure comes from the promise machinery rather than from the work.
public enum PromiseError: Error, Sendable, CustomStringConvertible {
    /// ``Promise/cancel()`` was called, directly or by a chain or Task that no longer needs the result.
    case cancelled
    /// The promise did not settle within the interval given to ``Promise/timeout(_:)``.
    case timedOut(after: TimeInterval)
    /// The predicate given to ``Promise/validate(in:_:)`` returned `false`.
    case validationFailed
    /// A `then` step returned the very promise it was meant to settle, which could never settle.
    case resolvedWithItself
    /// The resolver was released without settling the promise, which therefore never could.
    case abandoned
    /// ``Promise/race(_:in:)`` was given no promises, so no result can ever arrive.
    case noPromises
    /// Every promise given to ``Promise/any(_:in:)`` failed; their errors, in the order given.
    case allFailed([any Error])

    public var description: String {
        switch self {
        case .cancelled:
            "The promise was cancelled."
        case .timedOut(let interval):
            "The promise did not settle within \(interval) s."
        case .validationFailed:
            "The promise's value failed validation."
        case .resolvedWithItself:
            "A promise cannot be resolved with itself: the `then` step returned the promise it settles."
        case .abandoned:
            "The promise's resolver was released without settling it."
        case .noPromises:
            "`Promise.race` needs at least one promise."
        case .allFailed(let errors):
            "All \(errors.count) promises failed: \(errors.map { "\($0)" }.joined(separator: "; "))"
        }
    }

    /// Whether this is ``cancelled``: cancellation is usually not worth reporting to a user.
    public var isCancellation: Bool {
        if case .cancelled = self { true } else { false }
    }
}
