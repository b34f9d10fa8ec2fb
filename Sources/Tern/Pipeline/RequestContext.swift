import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What one request's pipeline needs from its API and its options, resolved once: a request's
/// option where it has one, else the API's.
///
/// The pipeline reads its settings here rather than reaching back into ``AbstractAPI``. A
/// request whose options change none of them shares its API's, made with the API: resolving
/// them anew, with the headers' dictionary, was a share of every request's cost. The API itself
/// stays with the request for what takes it as an argument (the delegate, plugins, the refresh)
/// and for the delegate, which can change while a request runs.
final class RequestContext: Sendable {
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
    /// How long an attempt may go with no byte moving; `nil` for no limit but `timeout`.
    let idleTimeout: TimeInterval?
    let cachePolicy: URLRequest.CachePolicy
    let commonHeaders: HTTPHeaders
    let maximumBodySize: Int?
    let validation: Validation
    let retryPolicy: RetryPolicy
    /// The request's own policy, else the configuration's; its sensitive headers are the
    /// configuration's too, whichever it is, so that a request's own policy forgets none.
    let redirectPolicy: RedirectPolicy
    /// What plugins are told of the API when the request's own policy names sensitive headers
    /// the configuration does not (a logger redacts them too); `nil` for the API's own.
    let apiContext: APIContext?
    let cookieJar: CookieJar?
    /// The keys servers must show; none for sample data, which no server sends.
    let certificatePins: CertificatePins?
    /// The stage that answers from the API's cache; none for sample data.
    let cacheStage: CacheStage?
    /// Whether the delegate signs the request and refreshes for it.
    let authenticates: Bool
    /// Whether a stage calls the app's code, a delegate aside: known once, asked at each attempt.
    private let stagesCallAppCode: Bool
    /// For the API's own settings: the parser's `Accept` with the common headers, as header
    /// fields, the fields of each request that adds none (no parameters) and asks for that
    /// `Accept`; `nil` when the fields would be refused, which each request then is.
    let resolvedFields: (accept: String?, fields: [String: String])?

    /// What a request with `options` needs of its API: `api`'s own
    /// (``AbstractAPI/requestContext``) when the options change none of it.
    static func resolved(_ api: AbstractAPI, options: borrowing RequestOptions) -> RequestContext {
        if options.authenticates, RefreshScope.isRefreshing(for: api) {
            var own = copy options
            own.authenticates = false
            return RequestContext(api: api, options: own)
        }
        guard options.changesNoSetting else { return RequestContext(api: api, options: options) }
        return api.requestContext
    }

    convenience init(api: AbstractAPI, options: borrowing RequestOptions) {
        self.init(AbstractAPI.Parts(of: api), parser: api.responseParser, options: options, resolvingFields: false)
    }

    /// The API's own settings, made once with the API: those of a request whose options change
    /// none, with its header fields resolved.
    convenience init(ofAPIMadeOf parts: AbstractAPI.Parts, parser: any ResponseParser) {
        self.init(parts, parser: parser, options: RequestOptions(), resolvingFields: true)
    }

    /// The settings of an API made of `parts` and `parser`, for a request with `options`;
    /// `resolvingFields` for the API's own, which requests share.
    private init(
        _ parts: AbstractAPI.Parts, parser apiParser: any ResponseParser, options: borrowing RequestOptions, resolvingFields: Bool
    ) {
        // Each setting read in place: a copy of the whole configuration retains and releases each part.
        let configuration = parts.configuration
        transport = configuration.usesSampleData ? SampleDataTransport(sample: options.sampleData) : parts.transport
        threadedTransport = parts.threadedTransport
        clock = parts.clock
        pipelineQueue = parts.pipelineQueue
        retryAccount = parts.retryAccount
        retryBudget = configuration.retryBudget
        parser = options.parser ?? apiParser
        plugins = options.plugins.isEmpty ? parts.plugins : parts.plugins + options.plugins
        adapters = configuration.adapters
        timeout = options.timeout ?? configuration.timeout
        idleTimeout = options.idleTimeout ?? configuration.idleTimeout
        cachePolicy = options.cachePolicy ?? configuration.cachePolicy
        var commonHeaders = configuration.commonHeaders
        if !options.headers.isEmpty { commonHeaders.merge(options.headers) }
        if let directives = options.cacheDirectives?.fieldValue { commonHeaders["Cache-Control"] = directives }
        self.commonHeaders = commonHeaders
        maximumBodySize = (options.maximumResponseSize ?? configuration.maximumResponseSize).bytes
        validation = options.validation ?? configuration.validation
        retryPolicy = options.retryPolicy ?? configuration.retryPolicy
        var redirectPolicy = options.redirectPolicy ?? configuration.redirectPolicy
        redirectPolicy.sensitiveHeaders.formUnion(configuration.redirectPolicy.sensitiveHeaders)
        self.redirectPolicy = redirectPolicy
        apiContext = redirectPolicy.sensitiveHeaders == configuration.redirectPolicy.sensitiveHeaders ? nil
            : APIContext(configuration: configuration, sensitiveHeaders: redirectPolicy.sensitiveHeaders)
        cookieJar = parts.cookieJar
        certificatePins = configuration.usesSampleData ? nil : configuration.certificatePins
        cacheStage = parts.cacheStage
        authenticates = options.authenticates
        stagesCallAppCode = !plugins.isEmpty || !adapters.isEmpty || Swift.type(of: parser) != JSONParser.self
            || redirectPolicy.decide != nil || validation.isCustom
        if resolvingFields {
            let accept = parser.acceptHeader
            var fields: HTTPHeaders = [:]
            if let accept { fields["Accept"] = accept }
            fields.merge(commonHeaders)
            let isSendable = fields.firstInvalidField == nil && fields.firstFramingField == nil
            resolvedFields = isSendable ? (accept, fields.dictionary) : nil
        } else {
            resolvedFields = nil
        }
    }

    /// Whether the request's stages call the app's own code: a delegate, plugins, adapters, a
    /// parser other than ``JSONParser`` itself, a redirect policy's closure, a custom
    /// validation. Such code may wait
    /// for another request, which only the transport's thread can carry, so those stages never
    /// run there.
    func callsAppCode(of api: AbstractAPI) -> Bool {
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
    func signer(for leg: Leg, of api: AbstractAPI) -> Signer? {
        authenticates && !leg.hasLeftOrigin ? api.signer : nil
    }
}
