import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What every client of a web service is: the base of ``APIClient`` and of subclasses written
/// in Osprey's style, one per service, with one short method per endpoint returning a ``Promise``.
///
/// The way Swift 6 checks is to hold an ``APIClient`` in a `Sendable` struct of your own (see
/// there). A subclass works too, but Swift cannot check a subclass of a non-final class: it
/// must restate `@unchecked Sendable`, and keep its stored properties immutable and `Sendable`
/// itself, because an API is used from many threads at once.
///
/// ```swift
/// final class ShopAPI: AbstractAPI, @unchecked Sendable {   // only `let`s of Sendable types
///     func products(page: Int) -> Promise<[Product]> {
///         request(route: .get("/products"), parameters: URLParameters(["page": page]))
///     }
///     func delete(_ id: Int) -> Promise<Void> { request(route: .delete("/products/\(id)")) }
/// }
///
/// let api = ShopAPI(configuration: APIConfiguration(baseURL: "https://shop.example/api/v2"))
/// ```
///
/// Building, encoding, sending, validating and parsing all run on a background queue of the
/// API's; only the promise's callbacks run on its `responseQueue`, `.main` by default as in
/// Osprey. Command-line tools and servers, whose main queue may never run, pass
/// `responseQueue: .global()` or use `try await promise.value`, which needs no queue at all.
///
/// Each request holds what it needs (configuration, transport, parser) until it settles, so
/// releasing the API while requests are in flight is safe: they complete and settle as usual,
/// then the API's session is invalidated.
open class AbstractAPI: @unchecked Sendable {   // unchecked: Swift cannot check a class others subclass; its state is behind locks
    /// What every request shares: common headers, timeout, cache policy, validation.
    public let configuration: APIConfiguration
    /// The parser that turns bodies into values, unless a request's options name another.
    package let responseParser: any ResponseParser
    /// What sends requests: unless another was given, the transport every such API in the
    /// process shares (one event thread, one connection pool), a ``CurlTransport`` on Linux (a
    /// ``URLSessionTransport`` where libcurl cannot be loaded) and a ``URLSessionTransport`` on
    /// Apple platforms.
    public let transport: any Transport
    /// Where promises' callbacks run unless a request's options or the callback name a queue.
    @usableFromInline package let responseQueue: DispatchQueue
    /// Where this API keeps cookies, as its configuration's `cookies` says;
    /// `nil` when it keeps none.
    public let cookieJar: CookieJar?
    /// Where requests are built, sent and parsed.
    @usableFromInline
    let pipelineQueue: DispatchQueue
    /// Where every wait happens: timeouts, retry backoff, the refresh guard's window.
    package let clock: any APIClock
    private let signerReference = Locked<Signer?>(nil)
    /// What retries have taken from the budget.
    let retryAccount: RetryAccount
    /// The configuration's plugins, and the logger its log level asks for.
    let plugins: [any Plugin]
    /// What the plugins are told of this API.
    let apiContext: APIContext
    /// The transport, when it has a thread of its own, where a request's first stages may run
    /// and whose ends the pipeline may handle there; `nil` for one without, or for sample data,
    /// which never uses it.
    let threadedTransport: (any ThreadedTransport)?
    /// The stage that answers from the configuration's cache, and keeps what it may.
    let cacheStage: CacheStage?
    /// The settings of a request whose options change none of them.
    let requestContext: RequestContext
    /// The configuration's base URL, read once.
    private let configuredBase: BaseURL?

    /// Creates an API client.
    ///
    /// - Parameters:
    ///   - responseParser: Turns bodies into values; ``JSONParser`` by default.
    ///   - configuration: Common headers, timeout, cache policy, validation.
    ///   - transport: What sends requests; by default the one every API given none shares, a
    ///     ``CurlTransport`` on Linux and a ``URLSessionTransport`` on Apple platforms. Pass one
    ///     for an API that wants its own thread, connections or trust.
    ///   - responseQueue: Where callbacks run; `.main` by default.
    ///   - clock: Where waits happen; real time by default, a `TestClock` in tests.
    public init(
        responseParser: any ResponseParser = JSONParser(),
        configuration: APIConfiguration = APIConfiguration(),
        transport: (any Transport)? = nil,
        responseQueue: DispatchQueue = .main,
        clock: (any APIClock)? = nil
    ) {
        let parts = Parts(configuration, transport ?? DefaultTransport.shared, clock: clock ?? SystemClock())
        (self.configuration, self.transport, cookieJar, plugins, pipelineQueue, threadedTransport, cacheStage, self.clock, retryAccount)
            = (parts.configuration, parts.transport, parts.cookieJar, parts.plugins, parts.pipelineQueue, parts.threadedTransport,
               parts.cacheStage, parts.clock, parts.retryAccount)
        apiContext = APIContext(configuration: configuration)
        requestContext = RequestContext(ofAPIMadeOf: parts, parser: responseParser)
        configuredBase = configuration.baseURL.map(BaseURL.init)
        self.responseParser = responseParser
        self.responseQueue = responseQueue
    }

    /// What an API derives from its configuration, transport and clock; what each request's
    /// settings (``RequestContext``) are resolved from.
    struct Parts {
        let configuration: APIConfiguration
        let transport: any Transport
        let cookieJar: CookieJar?
        let plugins: [any Plugin]
        let pipelineQueue: DispatchQueue
        let threadedTransport: (any ThreadedTransport)?
        let cacheStage: CacheStage?
        let clock: any APIClock
        let retryAccount: RetryAccount

        init(_ configuration: APIConfiguration, _ transport: any Transport, clock: any APIClock) {
            self.configuration = configuration
            self.transport = transport
            cookieJar = configuration.cookies.makeJar()
            plugins = configuration.plugins
            pipelineQueue = DispatchQueue(label: "tern.pipeline.\(configuration.name)", attributes: .concurrent)
            // An API answering with sample data never uses its transport: nothing to start there,
            // and no cache to answer from.
            threadedTransport = configuration.usesSampleData ? nil : transport as? any ThreadedTransport
            cacheStage = configuration.usesSampleData ? nil : configuration.cache.map { CacheStage(cache: $0, transport: transport) }
            self.clock = clock
            retryAccount = RetryAccount()
        }

        /// The parts `api` was made of.
        init(of api: AbstractAPI) {
            (configuration, transport, cookieJar, plugins, pipelineQueue, threadedTransport, cacheStage, clock, retryAccount)
                = (api.configuration, api.transport, api.cookieJar, api.plugins, api.pipelineQueue, api.threadedTransport,
                   api.cacheStage, api.clock, api.retryAccount)
        }
    }

    /// Starts a request's pipeline (building, signing, sending) off the caller's thread: on the
    /// transport's own thread when it has one, nothing else runs there and the stages call none
    /// of the app's code (`onTransport`), which then sends without another hop; else on the
    /// pipeline queue, in parallel with the transfers.
    @usableFromInline
    func startPipeline(onTransport: Bool, _ start: @escaping @Sendable () -> Void) {
        if onTransport, let threadedTransport, threadedTransport.runIfIdle(start) { return }
        pipelineQueue.async(execute: start)
    }

    /// `route` with a relative URL (no scheme: `/products`) joined to the API's base URL, its
    /// configuration's or else a `BaseAPI`'s (the tests' fixtures); an absolute one as it is. A relative route with
    /// no base URL stays as it is, and fails the request as an invalid URL.
    func resolved(_ route: Route) -> Route {
        joined(route).route
    }

    /// ``resolved(_:)``, and whether the joined URL is known to have a scheme in lowercase and a
    /// host, which the request then need not check (see ``BaseURL``).
    func joined(_ route: Route) -> (route: Route, isChecked: Bool) {
        guard !AbsoluteURL.hasScheme(route.url), let base, base.hasScheme else { return (route, false) }
        let (url, isChecked) = base.joined(route.url)
        return (Route(method: route.method, url: url), isChecked)
    }

    /// The base URL relative routes are joined to: the configuration's, else a `BaseAPI`'s.
    private var base: BaseURL? { configuredBase ?? (self as? any BaseAPI).map { BaseURL($0.baseURL) } }

    /// Why `route` cannot be sent when it is relative and the base URL has no scheme
    /// (`127.0.0.1:8080`, `shop.example/api`): joined, it would still be relative.
    func baseURLFailure(for route: Route) -> APIError? {
        guard !AbsoluteURL.hasScheme(route.url), let base, !base.hasScheme else { return nil }
        let reason = "the base URL \"\(base.string)\" has no scheme, so \"\(route.url)\" cannot be joined to it: "
            + "write \"https://\(base.string)\" (or \"http://\(base.string)\") in APIConfiguration.baseURL"
        return .invalidRequest(.init(reason: .other(reason), method: route.method.rawValue))
    }

    /// The object that signs requests and refreshes credentials. The API holds it, as it holds
    /// its transport: anything made from the API (a promise in flight, a page sequence, a
    /// stream) signs its requests for as long as it lives. Each of the delegate's methods is
    /// handed the API, so a delegate need not keep it; one that does keeps it `weak`, or the
    /// two keep each other alive.
    ///
    /// Several APIs may share one delegate: their requests refused at once wait for one refresh.
    public var delegate: (any APIDelegate)? {
        get { signer?.delegate }
        set {
            let signer = newValue.map(Signer.init)
            signerReference.withLock { $0 = signer }
        }
    }

    /// The delegate, with its refresh coordinator.
    var signer: Signer? { signerReference.withLock { $0 } }
}
