/// A request as a value: where it goes, what it sends, what it answers, and its options.
///
/// For teams that prefer request objects to methods (TRON's `APIRequest`, Get's `Request`,
/// KiNetworking's operations). A request is named by a ``Route``, as everywhere in Tern; this
/// value keeps it with its parameters and options, to hold in a `let`, pass around (to
/// ``AbstractAPI/pages(_:style:collectionKeyPath:)``, say), and send with ``AbstractAPI/send(_:)``,
/// through the same pipeline as
/// ``AbstractAPI/request(route:parameters:options:)-(_,_,_)->Promise<Value>``: delegate,
/// refresh, retries, plugins, parser.
///
/// ```swift
/// enum Shop {
///     static func products(page: Int) -> APIRequest<[Product]> {
///         APIRequest(.get("/products"), parameters: URLParameters(["page": page]))
///     }
///     static func delete(_ id: Int) -> APIRequest<Void> { APIRequest(.delete("/products/\(id)")) }
/// }
///
/// let products = try await api.send(Shop.products(page: 2)).value
/// ```
///
/// The value type says what comes back, as it does for `request`: a `Decodable` model through
/// the response parser, `Data` as it came, `String` as text, `Void` for nothing, or the whole
/// ``Response``.
public struct APIRequest<Value: Sendable>: Sendable {
    /// The HTTP method.
    @usableFromInline package var method: HTTPMethod
    /// A path under the API's base URL (``APIConfiguration/baseURL``), or an absolute URL.
    @usableFromInline package var path: String
    /// Query items, body and headers.
    @usableFromInline package var parameters: (any RequestParameters)?
    /// Settings that override the API's for this request.
    @usableFromInline package var options: RequestOptions
    /// How the value comes out of the response.
    @usableFromInline
    let decoding: ResponseDecoding<Value>

    @usableFromInline
    init(_ method: HTTPMethod, _ path: String, _ parameters: (any RequestParameters)?, _ options: RequestOptions, decoding: ResponseDecoding<Value>) {
        self.method = method
        self.path = path
        self.parameters = parameters
        self.options = options
        self.decoding = decoding
    }

    /// The route as written: a path the pipeline joins to the API's base URL (see
    /// ``APIConfiguration/baseURL``), or an absolute URL.
    @usableFromInline
    var route: Route { Route(method: method, url: path) }

    /// The route this request takes through `api`, joined already: for the paginator, which
    /// needs the origin before the pipeline runs.
    func route(in api: AbstractAPI) -> Route {
        api.resolved(route)
    }
}

extension APIRequest where Value: Decodable {
    /// A request to `route` whose body decodes as `Value` (or is kept as `Data`, or read as a
    /// `String`).
    @inlinable
    public init(_ route: Route, parameters: (any RequestParameters)? = nil, options: RequestOptions = RequestOptions()) {
        self.init(route.method, route.url, parameters, options, decoding: .automatic)
    }
}

extension APIRequest where Value == Void {
    /// A request to `route` whose body does not matter.
    @inlinable
    public init(_ route: Route, parameters: (any RequestParameters)? = nil, options: RequestOptions = RequestOptions()) {
        self.init(route.method, route.url, parameters, options, decoding: .ignored)
    }
}

extension APIRequest where Value == Response {
    /// A request to `route` answered by the whole ``Response``: status, headers, body, timing.
    @inlinable
    public init(_ route: Route, parameters: (any RequestParameters)? = nil, options: RequestOptions = RequestOptions()) {
        self.init(route.method, route.url, parameters, options, decoding: .response)
    }
}
