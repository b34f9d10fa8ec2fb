/// The API a plugin hears from, as a value: the configuration its requests go out with. A
/// plugin sees what happens, and cannot reach back into the API to change it.
public struct APIContext: Sendable {
    /// The API's configuration: its environment's name and base URL, headers and policies.
    public let configuration: APIConfiguration
    /// The headers the request keeps at its origin, besides `Authorization`, `Proxy-Authorization`
    /// and `Cookie`: the configuration's `sensitiveHeaders`, and those of a request's own
    /// `RequestOptions(redirectPolicy:)`, which ``LoggerPlugin`` redacts too.
    package let sensitiveHeaders: Set<String>

    /// Describes an API with `configuration`, for a request whose sensitive headers are
    /// `sensitiveHeaders` (the configuration's when `nil`).
    package init(configuration: APIConfiguration, sensitiveHeaders: Set<String>? = nil) {
        self.configuration = configuration
        self.sensitiveHeaders = sensitiveHeaders ?? configuration.redirectPolicy.sensitiveHeaders
    }
}
