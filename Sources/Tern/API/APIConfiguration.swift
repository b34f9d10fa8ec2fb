import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What an API's requests share, per environment (as in KiNetworking).
///
/// ```swift
/// extension APIConfiguration {
///     static let staging = APIConfiguration(name: "staging", commonHeaders: ["X-Client": "ios/4.2"], timeout: 20)
/// }
/// let api = ShopAPI(configuration: .staging)
/// ```
public struct APIConfiguration: Sendable {
    /// The environment's name, such as "production" or "staging".
    public var name: String
    /// Headers every request sends; parameters and the delegate can override them.
    public var commonHeaders: HTTPHeaders
    /// Seconds a request may take in all, retries and credential refresh included, unless its
    /// options say otherwise. Tern enforces it to the millisecond on every platform.
    public var timeout: TimeInterval
    /// The cache policy of requests whose options name none.
    public var cachePolicy: URLRequest.CachePolicy
    /// How much the built-in ``LoggerPlugin`` prints; `.none` installs none.
    public var logLevel: LogLevel
    /// Which responses count as success unless a request's options say otherwise.
    public var validation: Validation
    /// When failed requests are sent again, unless a request's options say otherwise.
    public var retryPolicy: RetryPolicy
    /// How much extra load retries may add to this API.
    public var retryBudget: RetryBudget
    /// How many credential refreshes the API allows before it gives up.
    public var refreshLimit: RefreshLimit
    /// Adapters every request goes through, in order.
    public var adapters: [any RequestAdapter]
    /// Plugins that watch every request.
    public var plugins: [any Plugin]

    /// Creates a configuration.
    public init(
        name: String = "default",
        commonHeaders: HTTPHeaders = [:],
        timeout: TimeInterval = 60,
        cachePolicy: URLRequest.CachePolicy = .useProtocolCachePolicy,
        logLevel: LogLevel = .none,
        validation: Validation = .successfulStatusCodes,
        retryPolicy: RetryPolicy = .default,
        retryBudget: RetryBudget = .default,
        refreshLimit: RefreshLimit = RefreshLimit(),
        adapters: [any RequestAdapter] = [],
        plugins: [any Plugin] = []
    ) {
        self.name = name
        self.commonHeaders = commonHeaders
        self.timeout = timeout
        self.cachePolicy = cachePolicy
        self.logLevel = logLevel
        self.validation = validation
        self.retryPolicy = retryPolicy
        self.retryBudget = retryBudget
        self.refreshLimit = refreshLimit
        self.adapters = adapters
        self.plugins = plugins
    }

    /// A 60-second timeout, no common headers, 2xx accepted.
    public static let `default` = APIConfiguration()
}
