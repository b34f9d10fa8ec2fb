import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The entry points of the pipeline. The promise's value type picks what comes back: a decoded
// model, the raw body (`Data`) or text (`String`) from the first overload, as `APIRequest`
// picks them; nothing (`Void`) or the whole `Response` from the other two.
extension AbstractAPI {
    /// Sends a request and decodes its body with the response parser; as `Data` the body comes
    /// as it came, and as a `String` as text, in the charset its `Content-Type` names (UTF-8
    /// when it names none).
    ///
    /// An empty body decodes as `nil` when `Value` is optional.
    ///
    /// ```swift
    /// func products(page: Int) -> Promise<[Product]> {
    ///     client.request(route: .get("/products"), parameters: URLParameters(["page": page]))
    /// }
    /// ```
    @inlinable
    public func request<Value: Decodable & Sendable>(
        route: Route,
        parameters: (any RequestParameters)? = nil,
        options: RequestOptions = RequestOptions()
    ) -> Promise<Value> {
        perform(route: route, parameters: parameters, options: options, decoding: .automatic)
    }

    /// Sends a request whose body does not matter, such as a `DELETE`.
    @inlinable
    public func request(
        route: Route,
        parameters: (any RequestParameters)? = nil,
        options: RequestOptions = RequestOptions()
    ) -> Promise<Void> {
        perform(route: route, parameters: parameters, options: options, decoding: .ignored)
    }

    /// Sends a request and returns the whole response: status, headers, body, URL, timing.
    @inlinable
    @_disfavoredOverload   // `try await request(…).value` as a statement means the `Void` one
    public func request(
        route: Route,
        parameters: (any RequestParameters)? = nil,
        options: RequestOptions = RequestOptions()
    ) -> Promise<Response> {
        perform(route: route, parameters: parameters, options: options, decoding: .response)
    }

    /// Starts the pipeline on the API's background queue and returns its promise at once.
    ///
    /// Inlinable so that the promise, and the decoding that settles it, are specialized for
    /// `Value` in the caller's module; the pipeline itself is not generic.
    @inlinable
    func perform<Value>(
        route: Route,
        parameters: (any RequestParameters)?,
        options: RequestOptions,
        sink: BodySink = .memory,
        decoding: ResponseDecoding<Value>
    ) -> Promise<Value> {
        let progress = ProgressChannel()
        let promise = Promise<Value>(queue: options.responseQueue ?? responseQueue, state: PromiseState(), progress: progress)
        let resolver = Promise<Value>.Resolver(promise)
        let execution = RequestExecution(api: self, route: route, parameters: parameters, options: options, progress: progress,
                                         sink: sink, settler: RequestSettler(resolver: resolver, decoding: decoding))
        resolver.onCancel { execution.cancel() }
        startPipeline(onTransport: !execution.callsAppCode) { execution.start() }
        return promise
    }
}
