/// Where a request goes: an HTTP method and a URL.
///
/// Build one with the method's name, from an absolute URL or, inside a ``BaseAPI``, from an
/// endpoint under its base URL:
///
/// ```swift
/// request(route: .get("https://api.example.com/status"))
/// request(route: post(endpoint: "/products"))        // in a BaseAPI
/// request(route: Route(method: "PURGE", url: "https://cdn.example.com/cache"))
/// ```
///
/// The URL stays a string until the request is built, so an invalid one fails the request with
/// ``APIError/InvalidRequest/Reason/invalidURL(_:)`` instead of crashing here.
public struct Route: Sendable, Equatable, CustomStringConvertible {
    /// The HTTP method.
    public var method: HTTPMethod
    /// The URL, absolute.
    public var url: String

    /// Creates a route for any method, standard or not.
    public init(method: HTTPMethod, url: String) {
        self.method = method
        self.url = url
    }

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
