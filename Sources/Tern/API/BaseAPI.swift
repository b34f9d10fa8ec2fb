/// A base URL declared as a property, for the test suite's fixtures (`TestAPI`, `AuthAPI`),
/// which build absolute routes with ``get(endpoint:)`` and its siblings. Not public: a user's
/// base URL lives in the configuration (``APIConfiguration/baseURL``), per environment, and
/// relative routes (``Route``) join it; two places for one URL were one too many.
///
/// A relative route joins the configuration's base URL when it names one, else this one.
/// Endpoints join the base URL with exactly one slash, however either side is written; the
/// base URL's own path and query are kept; an endpoint that is an absolute URL is used as it is.
package protocol BaseAPI {
    /// The URL every endpoint is relative to.
    var baseURL: String { get }
}

extension BaseAPI {
    /// A route for `method` to `endpoint` under ``baseURL``.
    package func route(_ method: HTTPMethod, endpoint: String) -> Route {
        Route(method: method, url: EndpointJoining.join(base: baseURL, endpoint: endpoint))
    }

    /// A `GET` route to `endpoint` under ``baseURL``.
    package func get(endpoint: String) -> Route { route(.get, endpoint: endpoint) }
    /// A `POST` route to `endpoint` under ``baseURL``.
    package func post(endpoint: String) -> Route { route(.post, endpoint: endpoint) }
    /// A `PUT` route to `endpoint` under ``baseURL``.
    package func put(endpoint: String) -> Route { route(.put, endpoint: endpoint) }
    /// A `PATCH` route to `endpoint` under ``baseURL``.
    package func patch(endpoint: String) -> Route { route(.patch, endpoint: endpoint) }
    /// A `DELETE` route to `endpoint` under ``baseURL``.
    package func delete(endpoint: String) -> Route { route(.delete, endpoint: endpoint) }
    /// A `HEAD` route to `endpoint` under ``baseURL``.
    package func head(endpoint: String) -> Route { route(.head, endpoint: endpoint) }
    /// An `OPTIONS` route to `endpoint` under ``baseURL``.
    package func options(endpoint: String) -> Route { route(.options, endpoint: endpoint) }
}
