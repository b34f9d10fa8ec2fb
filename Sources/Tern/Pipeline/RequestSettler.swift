/// Settles one request's promise: the only part of the pipeline that knows the promise's value
/// type. Not generic itself: it holds closures made where the value type is known (the
/// inlinable `perform`), so that decoding and settling are compiled for that type in the
/// caller's module. Reached through a generic type's conformance instead, every call ran
/// unspecialized, and looked the promise's types up at run time (the Benchmarks article).
@usableFromInline
struct RequestSettler: Sendable {
    /// Whether fulfilling reads the body through (parses it, or decodes its text), work that
    /// grows with the body.
    @usableFromInline let parses: Bool
    /// Decodes the value of a response with a parser and fulfills the promise with it; returns
    /// why it could not, settling nothing, so that plugins hear of the failure before the caller.
    @usableFromInline let fulfill: @Sendable (_ response: Response, _ parser: any ResponseParser) -> APIError?
    /// Rejects the promise.
    @usableFromInline let reject: @Sendable (APIError) -> Void

    @inlinable
    init<Value>(resolver: Promise<Value>.Resolver, decoding: ResponseDecoding<Value>) {
        parses = decoding.parses
        fulfill = { response, parser in
            switch decoding.value(of: response, parser: parser) {
            case .success(let value):
                resolver.fulfill(value)
                return nil
            case .failure(let error):
                return error
            }
        }
        reject = { resolver.reject($0) }
    }
}
