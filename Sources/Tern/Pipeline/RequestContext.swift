import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What one request's pipeline needs from its API and its options, resolved once when the
/// request starts: a request's option where it has one, else the API's.
///
/// The pipeline reads its settings here rather than reaching back into ``AbstractAPI``. The API
/// itself stays reachable for what takes it as an argument (the delegate, plugins, the refresh)
/// and for the delegate, which can change while a request runs.
struct RequestContext: Sendable {
    let api: AbstractAPI
    let transport: any Transport
    /// The transport, when it has a thread of its own, which the pipeline must not hold up.
    let threadedTransport: (any ThreadedTransport)?
    let clock: any APIClock
    /// Where stages run that must not hold up the transport's queue.
    let pipelineQueue: DispatchQueue
    let retryAccount: RetryAccount
    let retryBudget: RetryBudget
    let parser: any ResponseParser
    /// The API's plugins, then the request's.
    let plugins: [any Plugin]
    let adapters: [any RequestAdapter]
    let timeout: TimeInterval
    let cachePolicy: URLRequest.CachePolicy
    let commonHeaders: HTTPHeaders
    let maximumBodySize: Int?
    let validation: Validation
    let retryPolicy: RetryPolicy
    let redirectPolicy: RedirectPolicy
    let cookieJar: CookieJar?
    /// The keys servers must show; none for sample data, which no server sends.
    let certificatePins: CertificatePins?
    /// The stage that answers from the API's cache; none for sample data.
    let cacheStage: CacheStage?
    /// Whether the delegate signs the request and refreshes for it.
    let authenticates: Bool
    /// Whether a stage calls the app's code, a delegate aside: known once, asked at each attempt.
    private let stagesCallAppCode: Bool

    init(api: AbstractAPI, options: borrowing RequestOptions) {
        // Each setting read in place: a copy of the whole configuration retains and releases each part.
        self.api = api
        transport = api.configuration.usesSampleData ? SampleDataTransport(sample: options.sampleData) : api.transport
        threadedTransport = api.threadedTransport
        clock = api.clock
        pipelineQueue = api.pipelineQueue
        retryAccount = api.retryAccount
        retryBudget = api.configuration.retryBudget
        parser = options.parser ?? api.responseParser
        plugins = options.plugins.isEmpty ? api.plugins : api.plugins + options.plugins
        adapters = api.configuration.adapters
        timeout = options.timeout ?? api.configuration.timeout
        cachePolicy = options.cachePolicy ?? api.configuration.cachePolicy
        var commonHeaders = api.configuration.commonHeaders
        if !options.headers.isEmpty { commonHeaders.merge(options.headers) }
        if let directives = options.cacheDirectives?.fieldValue { commonHeaders["Cache-Control"] = directives }
        self.commonHeaders = commonHeaders
        maximumBodySize = (options.maximumResponseSize ?? api.configuration.maximumResponseSize).bytes
        validation = options.validation ?? api.configuration.validation
        retryPolicy = options.retryPolicy ?? api.configuration.retryPolicy
        redirectPolicy = options.redirectPolicy ?? api.configuration.redirectPolicy
        cookieJar = api.cookieJar
        certificatePins = api.configuration.usesSampleData ? nil : api.configuration.certificatePins
        cacheStage = api.cacheStage
        authenticates = options.authenticates
        stagesCallAppCode = !plugins.isEmpty || !adapters.isEmpty || Swift.type(of: parser) != JSONParser.self
            || redirectPolicy.decide != nil || validation.isCustom
    }

    /// Whether the request's stages call the app's own code: a delegate, plugins, adapters, a
    /// parser other than ``JSONParser`` itself, a redirect policy's closure, a custom
    /// validation. Such code may wait
    /// for another request, which only the transport's thread can carry, so those stages never
    /// run there.
    var callsAppCode: Bool {
        callsAppCode(signer: authenticates ? api.signer : nil)
    }

    /// Whether the stages call the app's own code, for an attempt signed by `signer` (see
    /// ``signer(for:)``): the same, without reading the delegate again.
    func callsAppCode(signer: Signer?) -> Bool {
        stagesCallAppCode || signer != nil
    }

    /// The delegate that signs and refreshes for `leg`: none once the chain has left the
    /// origin, or when the request does not authenticate. Read once per stage: it sits behind
    /// the API's lock, which every request shares.
    func signer(for leg: Leg) -> Signer? {
        authenticates && !leg.hasLeftOrigin ? api.signer : nil
    }
}
