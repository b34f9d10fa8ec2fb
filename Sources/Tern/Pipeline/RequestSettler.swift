/// Settles one request's promise: the only part of the pipeline that knows the promise's value
/// type, made where it is known, so that decoding is specialized for it and the pipeline is not.
@usableFromInline
protocol RequestSettling: Sendable {
    /// Whether fulfilling reads the body through (parses it, or decodes its text), work that
    /// grows with the body.
    var parses: Bool { get }
    /// Decodes the value of `response` with `parser` and fulfills the promise with it; returns
    /// why it could not, settling nothing, so that plugins hear of the failure before the caller.
    func fulfill(decoding response: Response, parser: any ResponseParser) -> APIError?
    /// Rejects the promise with `error`.
    func reject(_ error: APIError)
}

/// A request's settler for a promise of `Value`.
@usableFromInline
struct RequestSettler<Value: Sendable>: RequestSettling {
    @usableFromInline
    let resolver: Promise<Value>.Resolver
    @usableFromInline
    let decoding: ResponseDecoding<Value>

    @inlinable
    init(resolver: Promise<Value>.Resolver, decoding: ResponseDecoding<Value>) {
        self.resolver = resolver
        self.decoding = decoding
    }

    @inlinable
    var parses: Bool { decoding.parses }

    @inlinable
    func fulfill(decoding response: Response, parser: any ResponseParser) -> APIError? {
        switch decoding.value(of: response, parser: parser) {
        case .success(let value):
            resolver.fulfill(value)
            return nil
        case .failure(let error):
            return error
        }
    }

    @inlinable
    func reject(_ error: APIError) {
        resolver.reject(error)
    }
}
