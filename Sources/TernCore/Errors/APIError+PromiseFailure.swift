extension APIError {
    /// How a promise failed when the failure came from the promise machinery, not from the work.
    public enum PromiseFailure: Sendable, CustomStringConvertible {
        /// A promise's value failed a validation step's predicate.
        case validationFailed
        /// A `then` step returned the very promise it was meant to settle, which never could.
        case resolvedWithItself
        /// The resolver was released without settling the promise, which therefore never could.
        case abandoned
        /// ``Promise/race(_:in:)`` was given no promises, so no result can ever arrive.
        case noPromises
        /// Every promise given to ``Promise/any(_:in:)`` failed; their errors, in the order given.
        case allFailed([any Error])

        /// What went wrong, in words.
        public var description: String {
            switch self {
            case .validationFailed: "The promise's value failed validation."
            case .resolvedWithItself: "A promise cannot be resolved with itself: a `then` step returned the promise it settles."
            case .abandoned: "The promise's resolver was released without settling it."
            case .noPromises: "`Promise.race` needs at least one promise."
            case .allFailed(let errors):
                "All \(errors.count) promises failed: \(errors.prefix(3).map { bounded("\($0)") }.joined(separator: "; "))"
                    + (errors.count > 3 ? "; and \(errors.count - 3) more" : "")
            }
        }
    }
}
