/// Settles one request's promise: the only part of the pipeline that knows the promise's value
/// type. Not generic itself: it holds a closure made where the value type is known (the
/// inlinable `perform`), so that decoding and settling are compiled for that type in the
/// caller's module. Reached through a generic type's conformance instead, every call ran
/// unspecialized, and looked the promise's types up at run time (the Benchmarks article).
@usableFromInline
struct RequestSettler: Sendable {
    /// Whether fulfilling reads the body through (parses it, or decodes its text), work that
    /// grows with the body.
    @usableFromInline let parses: Bool
    /// Settles the promise with an ending: rejects it with a failure; fulfills it with the value
    /// an answer decodes to, or returns why it could not (it does not decode, or the promise was
    /// cancelled meanwhile), settling nothing, so that plugins hear of the failure before the
    /// caller. One closure, not one for each way: one allocation.
    @usableFromInline let settle: @Sendable (RequestExecution.Ending) -> APIError?

    @inlinable
    init<Value>(resolver: Promise<Value>.Resolver, decoding: ResponseDecoding<Value>) {
        parses = decoding.parses
        settle = { ending in
            switch ending {
            case .answered(let response, let parser):
                switch decoding.value(of: response, parser: parser) {
                case .success(let value):
                    // A cancel that settled the promise as the answer came is its ending, and
                    // plugins hear of it: its own handler finds the request over.
                    return resolver.fulfillIfPending(value) ? nil : .cancelled
                case .failure(let error):
                    return error
                }
            case .failed(let error):
                resolver.reject(error)
                return nil
            }
        }
    }
}
