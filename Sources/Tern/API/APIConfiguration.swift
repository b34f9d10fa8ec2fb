import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What an API's requests share, per environment (as in Osprey and KiNetworking): its base URL,
/// common headers, timeout and policies.
///
/// ```swift
/// extension APIConfiguration {
///     static let production = APIConfiguration(name: "production", baseURL: "https://shop.example/api/v2")
///     static let staging = APIConfiguration(name: "staging", baseURL: "https://staging.shop.example/api/v2",
///                                           commonHeaders: ["X-Client": "ios/4.2"], timeout: 20)
/// }
/// let shop = Shop(client: APIClient(configuration: .staging))
/// ```
///
/// A base URL known only at run time (from settings, a login screen, a test server) goes in the
/// same way: `APIConfiguration(baseURL: serverURL)`, or `configuration.baseURL = serverURL` on a
/// copy of an environment.
public struct APIConfiguration: Sendable {
    /// The environment's name, such as "production" or "staging".
    public var name: String
    /// The URL a route's relative URL is joined to (`.get("/products")`); `nil` by default, when
    /// routes must be absolute. See ``Route``.
    public var baseURL: String?
    /// Headers every request sends; parameters and the delegate can override them.
    public var commonHeaders: HTTPHeaders
    /// Seconds a request may take in all, retries and credential refresh included, unless its
    /// options say otherwise. Tern enforces it to the millisecond on every platform.
    public var timeout: TimeInterval
    /// The cache policy of requests whose options name none.
    public var cachePolicy: URLRequest.CachePolicy
    /// The largest response body a request takes into memory, after decompression; 64 MiB by
    /// default. A larger one stops the transfer and fails with ``APIError/responseTooLarge(_:)``,
    /// so an endless body or a compression bomb cannot exhaust memory.
    public var maximumResponseSize: SizeLimit
    /// How much the built-in ``LoggerPlugin`` prints; `.none` installs none.
    public var logLevel: LogLevel
    /// Which responses count as success unless a request's options say otherwise.
    public var validation: Validation
    /// When failed requests are sent again, unless a request's options say otherwise.
    public var retryPolicy: RetryPolicy
    /// Which redirects requests follow, unless a request's options say otherwise.
    public var redirectPolicy: RedirectPolicy
    /// How much extra load retries may add to this API.
    public var retryBudget: RetryBudget
    /// How many credential refreshes the API allows before it gives up.
    public var refreshLimit: RefreshLimit
    /// Adapters every request goes through, in order.
    public var adapters: [any RequestAdapter]
    /// Plugins that watch every request.
    public var plugins: [any Plugin]
    /// Where the API keeps cookies: in a ``CookieJar`` of its own, in memory, by default.
    public var cookies: CookieKeeping
    /// The keys the API's servers must show, per host; none pinned by default. Over a transport
    /// that cannot check them (URLSession on Linux), a request to a pinned host fails before it
    /// is sent, never unchecked; see ``CertificatePins``.
    public var certificatePins: CertificatePins?
    /// Where responses are kept and reused as RFC 9111 allows; none by default. One cache may
    /// serve several APIs; see ``HTTPCache``.
    public var cache: HTTPCache?
    /// Whether requests are answered by their `RequestOptions(sampleData:)` instead of the
    /// transport (Opera's stub mode): for previews and demos. Everything else runs as usual; a
    /// request without sample data fails with ``APIError/transportFailed(_:)`` and a
    /// ``MissingSampleData``. `false` by default.
    public var usesSampleData: Bool

    /// Creates a configuration.
    public init(
        name: String = "default",
        baseURL: String? = nil,
        commonHeaders: HTTPHeaders = [:],
        timeout: TimeInterval = 60,
        cachePolicy: URLRequest.CachePolicy = .useProtocolCachePolicy,
        maximumResponseSize: SizeLimit = .megabytes(64),
        logLevel: LogLevel = .none,
        validation: Validation = .successfulStatusCodes,
        retryPolicy: RetryPolicy = .default,
        redirectPolicy: RedirectPolicy = .follow,
        retryBudget: RetryBudget = .default,
        refreshLimit: RefreshLimit = RefreshLimit(),
        adapters: [any RequestAdapter] = [],
        plugins: [any Plugin] = [],
        cookies: CookieKeeping = .inAJarOfItsOwn,
        certificatePins: CertificatePins? = nil,
        cache: HTTPCache? = nil,
        usesSampleData: Bool = false
    ) {
        self.name = name
        self.baseURL = baseURL
        self.commonHeaders = commonHeaders
        self.timeout = timeout
        self.cachePolicy = cachePolicy
        self.maximumResponseSize = maximumResponseSize
        self.logLevel = logLevel
        self.validation = validation
        self.retryPolicy = retryPolicy
        self.redirectPolicy = redirectPolicy
        self.retryBudget = retryBudget
        self.refreshLimit = refreshLimit
        self.adapters = adapters
        self.plugins = plugins
        self.cookies = cookies
        self.certificatePins = certificatePins
        self.cache = cache
        self.usesSampleData = usesSampleData
    }

    /// A 60-second timeout, no common headers, 2xx accepted, bodies up to 64 MiB, up to 10
    /// redirects followed.
    public static let `default` = APIConfiguration()
}
