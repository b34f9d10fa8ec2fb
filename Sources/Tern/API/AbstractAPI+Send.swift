extension AbstractAPI {
    /// Sends a request value through the pipeline and returns its promise.
    ///
    /// ```swift
    /// let products = try await api.send(APIRequest<[Product]>(.get("/products"))).value
    /// ```
    @inlinable
    public func send<Value>(_ request: APIRequest<Value>) -> Promise<Value> {
        // The pipeline joins the route to the base URL, once.
        perform(route: request.route, parameters: request.parameters, options: request.options, decoding: request.decoding)
    }
}
