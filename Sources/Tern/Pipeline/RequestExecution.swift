import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One request's trip through the pipeline: build once, then attempts (adapt, sign, send) until
/// one is accepted, parsed and delivered, or the request fails. A redirect starts the next
/// ``Leg`` of the trip, whose attempts go through the same stages.
///
/// Between attempts it may wait for the API's credential refresh, or for a retry's backoff. It
/// settles its promise exactly once, whichever comes first: the final response, a failure, the
/// timeout (which spans all attempts), or cancellation. Whatever ends it also stops the rest:
/// the network task, the wait, the timer, the temporary body file.
///
/// Where the request is lives in a ``RequestStateMachine``, a value behind the request's one
/// lock that takes each event and returns the action to run; the settings come from a
/// ``RequestContext`` resolved once.
///
/// It is not generic: only its ``RequestSettler``, made where the value type is known, touches
/// the value.
/// Generic code compiled here would look type metadata up at nearly every step, dozens of times
/// per request, all through one table that every thread shares.
@usableFromInline
final class RequestExecution: Sendable {
    /// How a request ends.
    @usableFromInline
    enum Ending: Sendable {
        /// An accepted response, to be parsed with `parser`.
        case answered(Response, parser: any ResponseParser)
        /// A failure: the promise fails with it.
        case failed(APIError)
    }

    let api: AbstractAPI
    let context: RequestContext
    private let route: Route
    /// Whether `route`'s URL is known to have a scheme in lowercase and a host (``BaseURL``).
    private let urlIsChecked: Bool
    private let parameters: (any RequestParameters)?
    let settler: RequestSettler
    private let progress: ProgressChannel
    /// Where the accepted body goes.
    private let sink: BodySink
    /// Whether settling reads the body through: parses it, or decodes its text.
    private let parsesAnswer: Bool
    let machine = Locked(RequestStateMachine())
    /// When the request was asked for: its timeout counts from here, not from when the pipeline
    /// queue got to it (behind thousands of others, that was seen to be a second later).
    let askedAt: TimeInterval

    @usableFromInline
    init(
        api: AbstractAPI,
        route: Route,
        parameters: (any RequestParameters)?,
        options: borrowing RequestOptions,
        progress: ProgressChannel,
        sink: BodySink,
        settler: RequestSettler
    ) {
        self.api = api
        context = RequestContext.resolved(api, options: options)
        askedAt = context.clock.now
        (self.route, urlIsChecked) = api.joined(route)
        self.parameters = parameters
        self.progress = progress
        self.sink = sink
        parsesAnswer = settler.parses
        self.settler = settler
    }

    var download: DownloadFile? { sink.file }

    /// What the request's plugins are told of its API: with the request's own sensitive headers.
    var pluginContext: APIContext { context.apiContext ?? api.apiContext }

    /// Whether the request has ended: settled, cancelled, timed out.
    var hasEnded: Bool { machine.withLock { $0.isFinished } }
    var stream: StreamBuffer? { sink.stream }

    // MARK: Stage 1: build, once

    /// Whether the stages call the app's own code (see ``RequestContext/callsAppCode(of:)``).
    @usableFromInline
    var callsAppCode: Bool { context.callsAppCode(of: api) }

    /// Runs on the API's pipeline queue.
    @usableFromInline
    func start() {
        let timeout = context.timeout
        // Cancelled before the pipeline got to it: build nothing (a multipart body means a file).
        guard !hasEnded else { return }
        guard timeout > 0 else {  // NaN too
            return finish(.failed(.invalidRequest(.init(reason: .invalidTimeout(timeout), method: route.method.rawValue))))
        }
        if let idle = context.idleTimeout, !(idle > 0) {
            return finish(.failed(.invalidRequest(.init(reason: .invalidTimeout(idle), method: route.method.rawValue))))
        }
        if !urlIsChecked, let failure = api.baseURLFailure(for: route) { return finish(.failed(failure)) }
        // The timeout spans the whole request: waiting for the pipeline, building its body, every
        // attempt, refreshes.
        let now = context.clock.now
        let remaining = timeout - (now - askedAt)
        let timer = timeout.isFinite ? context.clock.schedule(after: max(remaining, 0)) { [self] in timedOut(after: context.timeout) } : nil
        guard run(.start(timer: timer)) else { return }
        // A stream's body is read by its views (lines, events, NDJSON), not as the parser's type:
        // asked for that (`application/json`), a server that chooses by `Accept` answered JSON
        // or 406 where events were wanted.
        let accept = stream == nil ? context.parser.acceptHeader : "*/*"
        do {
            let (request, temporaryFile) = try RequestBuilder.build(
                route: route,
                urlIsChecked: urlIsChecked,
                parameters: parameters,
                timeout: timeout,
                cachePolicy: context.cachePolicy,
                commonHeaders: context.commonHeaders,
                acceptHeader: accept,
                resolvedFields: context.resolvedFields.flatMap { $0.accept == accept ? $0.fields : nil },
                maximumBodySize: context.maximumBodySize,
                isCancelled: { [self] in hasEnded }
            )
            // Timed out or cancelled while the body was being written: nobody will send it.
            guard run(.built(request.urlRequest, temporaryFile: temporaryFile)) else { return }
            // Counted in the budget's window as of the start: a window is seconds long.
            context.retryAccount.recordRequest(at: now, budget: context.retryBudget)
            var built = request
            built.isStream = stream != nil
            attempt(Leg(built))
        } catch {
            finish(failed(error))
        }
    }

    /// Ends the request as timed out: from its timer, or from a stage that finds the deadline
    /// passed; `answered`, the attempt whose answer came too late, whose end plugins are owed
    /// (the machine no longer holds it on the wire).
    func timedOut(after interval: TimeInterval, answered: URLRequest? = nil) {
        let (request, task, awaitingCredentials) = machine.withLock { ($0.latestRequest, $0.task, $0.isAwaitingCredentials) }
        let method = request.map(Self.method(of:)) ?? route.method
        // Asked before the task is cancelled, which takes it out of the line.
        let waited = (task as? any ConnectionWaiting)?.isWaitingForConnection ?? false
        let timeout = APIError.timeout(.init(interval: interval, method: method.rawValue, url: request?.url ?? URL(string: route.url),
                                             waitedForConnection: waited, waitedForRefresh: awaitingCredentials, wasDownload: download != nil))
        if let answered { report(.failure(timeout), for: answered) }
        finish(.failed(timeout), stoppingOn: context.pipelineQueue)
    }

    // MARK: Stages 2 and 3: wait for credentials, adapt, sign, send

    func attempt(_ leg: Leg) {
        guard run(.prepare) else { return }
        let request = leg.request
        let signer = context.signer(for: leg, of: api)
        // Requests do not go out with credentials that are being replaced.
        if let refresh = signer?.refresher.inFlight {
            guard run(.awaitCredentials) else { return }
            return resume(after: refresh, leg)
        }
        // A request that wants only what the cache keeps is signed with what the delegate has:
        // a refresh would go to the network it must not reach, and the cache keeps answers
        // under the credentials they were fetched with.
        if let signer, !answersFromTheCacheAlone(request.urlRequest),
           signer.delegate.api(api, needsRefreshBeforeSending: request.urlRequest) {
            guard run(.awaitCredentials) else { return }
            return resume(after: signer.refresh(signedWith: signer.refresher.generation, for: api), leg)
        }
        do {
            var signed = request
            for adapter in context.adapters {
                try adapt(&signed.urlRequest, with: adapter)
            }
            // An adapter may add credentials to every request; they too stay at their origin,
            // and so does what it changed in the URL (an API key in the query, `?key=…`): off
            // the origin, the request goes to the URL the redirect named, as it named it.
            if leg.hasLeftOrigin {
                leg.removeCredentials(from: &signed.urlRequest, policy: context.redirectPolicy)
                signed.urlRequest.url = leg.request.urlRequest.url
            }
            // After adapters, whose fields pick the kept response that varies on them (an
            // adapter's `Accept-Language`); before the delegate, which then signs the
            // conditions too. A stream never uses the cache.
            let lookup = context.cacheStage?.prepareRevalidation(of: &signed)
            let generation = signer?.refresher.generation ?? 0
            if let signer {
                try APIError.catching({ .invalidRequest(.init(reason: .other("the delegate stopped the request: \($0)"), method: Self.method(of: request.urlRequest).rawValue)) }) {
                    try signer.delegate.api(api, willSend: &signed.urlRequest)
                }
            }
            // What adapters and the delegate set is checked like everything else; the rest was
            // checked when the request was built.
            if signer != nil || !context.adapters.isEmpty {
                try RequestBuilder.validate(method: Self.method(of: signed.urlRequest),
                                            headers: HTTPHeaders(signed.urlRequest.allHTTPHeaderFields ?? [:]))
            }
            try pin(&signed)
            send(signed, lookup: lookup, leg: leg, signer: signer, generation: generation)
        } catch {
            finish(failed(error))
        }
    }

    /// Hands the transport the keys the request's host is pinned to, once its URL is final
    /// (each stop of a redirect chain comes here); a request that could not be checked fails.
    private func pin(_ request: inout TransportRequest) throws(APIError) {
        guard let pins = context.certificatePins, let url = request.urlRequest.url, let host = url.host else { return }
        let hashes = pins.hashes(for: host)
        guard !hashes.isEmpty else { return }
        func failure(_ reason: APIError.PinningFailure.Reason) -> APIError {
            .pinningFailed(.init(reason: reason, host: host, pins: hashes.map { "sha256/" + $0 },
                                 method: Self.method(of: request.urlRequest).rawValue, url: url))
        }
        guard url.scheme?.lowercased() == "https" else { throw failure(.notEncrypted) }
        guard (context.transport as? any KeyPinningTransport)?.canPinKeys == true else { throw failure(.transportCannotPin) }
        request.pinnedKeys = hashes
    }

    /// Whether `request` is answered by the cache alone (`only-if-cached`, or
    /// `.returnCacheDataDontLoad`, with a cache): with what it keeps, or a 504 of its own.
    func answersFromTheCacheAlone(_ request: URLRequest) -> Bool {
        context.cacheStage != nil && CacheStage.wantsOnlyKept(request)
    }

    private func adapt(_ request: inout URLRequest, with adapter: any RequestAdapter) throws(APIError) {
        try APIError.catching({ .invalidRequest(.init(reason: .other("the adapter \(type(of: adapter)) stopped the request: \($0)"), method: Self.method(of: request).rawValue)) }) {
            try adapter.adapt(&request)
        }
    }

    /// Attempts again once `refresh` settles, or fails with its error.
    func resume(after refresh: Promise<Void>, _ leg: Leg) {
        refresh.onResult(in: context.pipelineQueue) { [self] result in
            switch result {
            case .success: attempt(leg)
            case .failure(let error): finish(failed(error))
            }
        }
    }

    private func send(_ signed: TransportRequest, lookup: CacheLookup?, leg: Leg, signer: Signer?, generation: Int) {
        var ranged = signed
        // A download goes on from the bytes it has, if it can.
        download?.prepare(&ranged.urlRequest)
        // Its body goes to the file, under the file's limit; the transport stops only past both.
        if let download { ranged.maximumBodySize = download.maximumSize.flatMap { file in signed.maximumBodySize.map { max($0, file) } } }
        // A stream has no end to limit; the body of a response that does not open it keeps the limit.
        if let stream {
            ranged.maximumBodySize = nil
            ranged.usesNewConnection = stream.usesNewConnection
        }
        addCookies(to: &ranged.urlRequest, leg: leg)
        ranged.credentialHeaders = context.redirectPolicy.sensitiveHeaders
        ranged.hasLeftOrigin = leg.hasLeftOrigin
        let request = ranged
        guard case .send(let attempt) = machine.withLock({ $0.handle(.send(request.urlRequest)) }) else { return }
        context.plugins.forEach { $0.observe(.willSend(request.urlRequest), api: pluginContext) }
        // Ended as plugins heard it announced (a plugin's cancel, another's, the timeout): the
        // end told them how it went, and nothing goes on the wire for it.
        guard machine.withLock({ $0.stillSends(attempt) }) else { return }
        // The attempt's delegate, read once as it began: the API keeps it behind its lock.
        let callsAppCode = context.callsAppCode(signer: signer)
        let sent = SentAttempt(request: request.urlRequest, attempt: attempt, leg: leg, signer: signer, generation: generation,
                               callsAppCode: callsAppCode, sentFromJob: context.threadedTransport?.caller == .job)
        // A head judged by the app's code is judged on the pipeline's queue, never the transport's thread.
        let collector = ResponseCollector(sink, for: self, sent: consume sent, limit: signed.maximumBodySize, uploadLength: request.bodyLength,
                                          progress: progress, judgesHeadOn: callsAppCode ? context.pipelineQueue : nil)
        let streamAttempt = stream?.sending(request.urlRequest)
        let task = context.cacheStage?.send(request, lookup: lookup, through: context.transport, to: collector)
            ?? context.transport.send(request, to: collector)
        collector.attach(task)
        // Finished already (cancelled, timed out), or answered first (a redirect followed before
        // this returned): the task has nothing to do, unless its head opened the stream, which
        // the machine knows. Only the task the machine keeps is the stream's.
        if case .cancelTask(let task) = machine.withLock({ $0.handle(.started(task, attempt: attempt)) }) {
            task.cancel()
        } else {
            if let streamAttempt { stream?.attach(task, sentAs: streamAttempt) }
            if let idle = context.idleTimeout, idle.isFinite, !(task is any SilentUntilItEnds) {
                watchIdle(attempt, task: task, timeout: idle)
            }
        }
    }

    /// The jar's cookies for the request's URL, unless it brings its own `Cookie` or its chain has
    /// left the origin (from then on no credential goes out); the transport adds none of its own.
    private func addCookies(to request: inout URLRequest, leg: Leg) {
        guard let jar = context.cookieJar else { return }
        // An empty jar looks nothing up, but still writes a file it failed to (a sign-out).
        guard !jar.isEmpty else { return jar.writeAgainIfItFailed() }
        guard !leg.hasLeftOrigin, let url = request.url,
              request.value(forHTTPHeaderField: "Cookie") == nil, let cookies = jar.headerValue(for: url) else { return }
        request.setValue(cookies, forHTTPHeaderField: "Cookie")
    }

    /// Keeps the cookies a response sets, from any stop of the chain: each field on its own, as
    /// a browser reads them, when the transport handed them so.
    func keepCookies(of head: ResponseHead, for request: URLRequest) {
        guard let jar = context.cookieJar,
              let fields = head.setCookies ?? head.headers["Set-Cookie"].map(SetCookieFields.split), !fields.isEmpty,
              let url = request.url else { return }
        jar.setCookies(from: fields, for: url)
    }

    /// Takes the end of `sent`'s exchange where ``EndPlacement`` says: here, or on the pipeline's queue.
    func ended(_ result: Result<TransportResponse, ExchangeFailure>, metrics: TransferMetrics?, earlier: [TransferMetrics], of sent: SentAttempt) {
        let timing = sent.timing()
        let answered = if case .success = result { true } else { false }
        if EndPlacement.handlesElsewhere(caller: context.threadedTransport?.caller ?? .elsewhere, callsAppCode: sent.callsAppCode,
                                         answered: answered, parses: parsesAnswer, sentFromJob: sent.sentFromJob) {
            context.pipelineQueue.async { [self] in received(result, metrics: metrics, earlier: earlier, of: sent, timing: timing) }
        } else {
            received(result, metrics: metrics, earlier: earlier, of: sent, timing: timing)
        }
    }

    /// Runs `body` on `attempt`'s exchange, under the request's one lock; `nil` once the request
    /// has moved past that attempt.
    func collecting<Result: Sendable>(_ attempt: Int, _ body: (inout ExchangeState) -> Result) -> Result? {
        machine.withLock { $0.collecting(attempt, body) }
    }

    /// Keeps what an earlier exchange of `attempt` measured: whether the request still waits
    /// for the attempt's answer.
    func earlierExchangeEnded(_ attempt: Int, metrics: TransferMetrics?) -> Bool {
        machine.withLock { $0.earlierExchangeEnded(attempt, metrics: metrics) }
    }
}
