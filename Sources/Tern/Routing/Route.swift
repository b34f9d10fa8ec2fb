/// Where a request goes: an HTTP method and a URL.
///
/// Build one with the method's name, from a path under the API's base URL or from an absolute URL:
///
/// ```swift
/// let created: Promise<Product> = client.request(route: .post("/products"))        // joined to APIConfiguration.baseURL
/// let health: Promise<Response> = client.request(route: .get("https://status.example.com/health"))  // used as it is
/// let purged: Promise<Void> = client.request(route: Route(method: "PURGE", url: "/cache"))
/// ```
///
/// A relative URL joins the base URL with exactly one slash between them, however either side
/// is written; the base URL's own path and query are kept (`https://x/api?key=k` and
/// `/items?page=2` make `https://x/api/items?key=k&page=2`).
///
/// The URL stays a string until the request is built, so an invalid one fails the request with
/// ``APIError/InvalidRequest/Reason/invalidURL(_:)`` instead of crashing here.
public struct Route: Sendable, Equatable, CustomStringConvertible {
    /// The HTTP method.
    @usableFromInline package var method: HTTPMethod
    /// The URL: absolute, or relative to the API's base URL.
    @usableFromInline package var url: String

    /// Creates a route for any method, standard or not.
    public init(method: HTTPMethod, url: String) {
        self.method = method
        self.url = url
    }

    /// The method and the URL, as in `GET https://shop.example/products`.
    public var description: String { "\(method) \(url)" }

    /// A `GET` route.
    public static func get(_ url: String) -> Route { Route(method: .get, url: url) }
    /// A `POST` route.
    public static func post(_ url: String) -> Route { Route(method: .post, url: url) }
    /// A `PUT` route.
    public static func put(_ url: String) -> Route { Route(method: .put, url: url) }
    /// A `PATCH` route.
    public static func patch(_ url: String) -> Route { Route(method: .patch, url: url) }
    /// A `DELETE` route.
    public static func delete(_ url: String) -> Route { Route(method: .delete, url: url) }
    /// A `HEAD` route.
    public static func head(_ url: String) -> Route { Route(method: .head, url: url) }
    /// An `OPTIONS` route.
    public static func options(_ url: String) -> Route { Route(method: .options, url: url) }
}
