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
///                                           commonHeaders: ["X-Client": "tern-demo/1.0"], timeout: 20)
/// }
/// ```
///
/// A base URL known only at run time (from settings, a login screen, a test server) goes in the
/// same way: `APIConfiguration(baseURL: serverURL)`, or `configuration.baseURL = serverURL` on a
/// copy of an environment. Every other setting is given to ``init(name:baseURL:commonHeaders:timeout:idleTimeout:cachePolicy:maximumResponseSize:validation:retryPolicy:redirectPolicy:retryBudget:refreshLimit:adapters:plugins:cookies:certificatePins:cache:usesSampleData:)``;
/// a request's own ``RequestOptions`` override most of them.
public struct APIConfiguration: Sendable {
    /// The environment's name, such as "production" or "staging".
    public var name: String
    /// The URL a route's relative URL is joined to (`.get("/products")`); `nil` by default, when
    /// routes must be absolute. See ``Route``.
    public var baseURL: String?
    /// Headers every request sends; parameters and the delegate can override them.
    package var commonHeaders: HTTPHeaders
    /// Seconds a request may take in all, retries and credential refresh included, unless its
    /// options say otherwise. Tern enforces it to the millisecond on every platform.
    package var timeout: TimeInterval
    /// The longest an attempt goes with no byte moving either way before it is given up.
    package var idleTimeout: TimeInterval?
    /// The cache policy of requests whose options name none.
    package var cachePolicy: URLRequest.CachePolicy
    /// The largest response body a request takes into memory, after decompression; 64 MiB by
    /// default. A larger one stops the transfer and fails with ``APIError/responseTooLarge(_:)``,
    /// so an endless body or a compression bomb cannot exhaust memory.
    package var maximumResponseSize: SizeLimit
    /// Which responses count as success unless a request's options say otherwise.
    package var validation: Validation
    /// When failed requests are sent again, unless a request's options say otherwise.
    package var retryPolicy: RetryPolicy
    /// Which redirects requests follow, unless a request's options say otherwise.
    package var redirectPolicy: RedirectPolicy
    /// How much extra load retries may add to this API.
    package var retryBudget: RetryBudget
    /// How many credential refreshes the API allows before it gives up.
    package var refreshLimit: RefreshLimit
    /// Adapters every request goes through, in order.
    package var adapters: [any RequestAdapter]
    /// Plugins that watch every request.
    package var plugins: [any Plugin]
    /// Where the API keeps cookies: in a ``CookieJar`` of its own, in memory, by default.
    package var cookies: CookieKeeping
    /// The keys the API's servers must show, per host; none pinned by default. Over a transport
    /// that cannot check them (URLSession on Linux), a request to a pinned host fails before it
    /// is sent, never unchecked; see ``CertificatePins``.
    package var certificatePins: CertificatePins?
    /// Where responses are kept and reused as RFC 9111 allows; none by default. One cache may
    /// serve several APIs; see ``HTTPCache``.
    package var cache: HTTPCache?
    /// Whether requests are answered by their `RequestOptions(sampleData:)` instead of the
    /// transport (Opera's stub mode): for previews and demos. Everything else runs as usual; a
    /// request without sample data fails with ``APIError/transportFailed(_:)`` and a
    /// ``MissingSampleData``. `false` by default.
    package var usesSampleData: Bool

    /// Creates a configuration.
    ///
    /// - Parameters:
    ///   - name: The environment's name, such as "production" or "staging".
    ///   - baseURL: The URL a route's relative URL is joined to; `nil` when routes are absolute.
    ///   - commonHeaders: Headers every request sends; parameters and the delegate can override them.
    ///   - timeout: Seconds a request may take in all, retries and credential refresh included.
    ///   - idleTimeout: Seconds an attempt may go with no byte sent or received, waiting for a
    ///     connection or a file descriptor aside; then it fails with a `URLError.timedOut`, which
    ///     the retry policy may retry. `nil` (the default) for none: the request's `timeout` alone.
    ///   - cachePolicy: The cache policy of requests whose options name none.
    ///   - maximumResponseSize: The largest body a request takes into memory, after decompression;
    ///     a larger one fails with ``APIError/responseTooLarge(_:)``.
    ///   - validation: Which responses count as success.
    ///   - retryPolicy: When failed requests are sent again.
    ///   - redirectPolicy: Which redirects requests follow.
    ///   - retryBudget: How much extra load retries may add to this API.
    ///   - refreshLimit: How many credential refreshes the API allows before it gives up.
    ///   - adapters: Adapters every request goes through, in order.
    ///   - plugins: Plugins that watch every request, such as a ``LoggerPlugin``.
    ///   - cookies: Where the API keeps cookies: in a ``CookieJar`` of its own by default.
    ///   - certificatePins: The keys the API's servers must show, per host; see ``CertificatePins``.
    ///   - cache: Where responses are kept and reused as RFC 9111 allows; see ``HTTPCache``.
    ///   - usesSampleData: Whether requests are answered by their sample data instead of the
    ///     transport, for previews and demos; see ``SampleData``.
    public init(
        name: String = "default",
        baseURL: String? = nil,
        commonHeaders: HTTPHeaders = [:],
        timeout: TimeInterval = 60,
        idleTimeout: TimeInterval? = nil,
        cachePolicy: URLRequest.CachePolicy = .useProtocolCachePolicy,
        maximumResponseSize: SizeLimit = .megabytes(64),
        validation: Validation = .statusCodes(200..<300),
        retryPolicy: RetryPolicy = RetryPolicy(),
        redirectPolicy: RedirectPolicy = RedirectPolicy(),
        retryBudget: RetryBudget = RetryBudget(),
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
        self.idleTimeout = idleTimeout
        self.cachePolicy = cachePolicy
        self.maximumResponseSize = maximumResponseSize
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
    package static let `default` = APIConfiguration()
}
