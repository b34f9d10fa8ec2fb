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
/// It is not generic: only its ``RequestSettling``, made where the value type is known, touches
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

    private let context: RequestContext
    private let route: Route
    private let parameters: (any RequestParameters)?
    private let settler: any RequestSettling
    private let progress: ProgressChannel
    /// Where the accepted body goes.
    private let sink: BodySink
    /// Whether settling reads the body through: parses it, or decodes its text.
    private let parsesAnswer: Bool
    private let machine = Locked(RequestStateMachine())
    /// When the request was asked for: its timeout counts from here, not from when the pipeline
    /// queue got to it (behind thousands of others, that was seen to be a second later).
    private let askedAt: TimeInterval

    @usableFromInline
    init(
        api: AbstractAPI,
        route: Route,
        parameters: (any RequestParameters)?,
        options: RequestOptions,
        progress: ProgressChannel,
        sink: BodySink,
        settler: any RequestSettling
    ) {
        context = RequestContext(api: api, options: options)
        askedAt = context.clock.now
        self.route = api.resolved(route)
        self.parameters = parameters
        self.progress = progress
        self.sink = sink
        parsesAnswer = settler.parses
        self.settler = settler
    }

    private var api: AbstractAPI { context.api }
    private var download: DownloadFile? { sink.file }
    private var stream: StreamBuffer? { sink.stream }

    // MARK: Stage 1: build, once

    /// Whether the stages call the app's own code (see ``RequestContext/callsAppCode``).
    @usableFromInline
    var callsAppCode: Bool { context.callsAppCode }

    /// Runs on the API's pipeline queue.
    @usableFromInline
    func start() {
        let timeout = context.timeout
        // Cancelled before the pipeline got to it: build nothing (a multipart body means a file).
        guard !machine.withLock({ $0.isFinished }) else { return }
        guard timeout > 0 else {  // NaN too
            return finish(.failed(.invalidRequest(.init(reason: .invalidTimeout(timeout), method: route.method.rawValue))))
        }
        if let failure = api.baseURLFailure(for: route) { return finish(.failed(failure)) }
        // The timeout spans the whole request: waiting for the pipeline, building its body, every
        // attempt, refreshes.
        let remaining = timeout - (context.clock.now - askedAt)
        let timer = timeout.isFinite ? context.clock.schedule(after: max(remaining, 0)) { [self] in timedOut(after: timeout) } : nil
        guard run(.start(timer: timer)) else { return }
        do {
            let (request, temporaryFile) = try RequestBuilder.build(
                route: route,
                parameters: parameters,
                timeout: timeout,
                cachePolicy: context.cachePolicy,
                commonHeaders: context.commonHeaders,
                // A stream's body is read by its views (lines, events, NDJSON), not as the
                // parser's type: asked for that (`application/json`), a server that chooses by
                // `Accept` answered JSON or 406 where events were wanted.
                acceptHeader: stream == nil ? context.parser.acceptHeader : "*/*",
                maximumBodySize: context.maximumBodySize,
                isCancelled: { [self] in machine.withLock { $0.isFinished } }
            )
            // Timed out or cancelled while the body was being written: nobody will send it.
            guard run(.built(request.urlRequest, temporaryFile: temporaryFile)) else { return }
            context.retryAccount.recordRequest(at: context.clock.now, budget: context.retryBudget)
            var built = request
            built.isStream = stream != nil
            attempt(Leg(built))
        } catch {
            finish(failed(error))
        }
    }

    private func timedOut(after interval: TimeInterval) {
        let (request, task) = machine.withLock { ($0.latestRequest, $0.task) }
        let method = request.map(Self.method(of:)) ?? route.method
        // Asked before the task is cancelled, which takes it out of the line.
        let waited = (task as? any ConnectionWaiting)?.isWaitingForConnection ?? false
        let timeout = APIError.timeout(.init(interval: interval, method: method.rawValue, url: request?.url ?? URL(string: route.url),
                                             waitedForConnection: waited))
        finish(.failed(timeout), stoppingOn: context.pipelineQueue)
    }

    // MARK: Stages 2 and 3: wait for credentials, adapt, sign, send

    private func attempt(_ leg: Leg) {
        guard run(.prepare) else { return }
        let request = leg.request
        let delegate = context.delegate(for: leg)
        // Requests do not go out with credentials that are being replaced.
        if delegate != nil, let refresh = context.refresher.inFlight {
            guard run(.awaitCredentials) else { return }
            return resume(after: refresh, leg)
        }
        if let delegate, delegate.api(api, needsRefreshBeforeSending: request.urlRequest) {
            guard run(.awaitCredentials) else { return }
            let refresh = context.refresher.refresh(signedWith: context.refresher.generation, api: api, delegate: delegate)
            return resume(after: refresh, leg)
        }
        do {
            var signed = request
            // Before adapters and the delegate, which then sign the conditions too. A stream
            // never uses the cache.
            let lookup = context.cacheStage?.prepareRevalidation(of: &signed)
            for adapter in context.adapters {
                try adapt(&signed.urlRequest, with: adapter)
            }
            // An adapter may add credentials to every request; they too stay at their origin.
            if leg.hasLeftOrigin { leg.removeCredentials(from: &signed.urlRequest, policy: context.redirectPolicy) }
            let generation = delegate == nil ? 0 : context.refresher.generation
            if let delegate {
                try APIError.catching({ .invalidRequest(.init(reason: .other("the delegate stopped the request: \($0)"), method: Self.method(of: request.urlRequest).rawValue)) }) {
                    try delegate.api(api, willSend: &signed.urlRequest)
                }
            }
            // What adapters and the delegate set is checked like everything else; the rest was
            // checked when the request was built.
            if delegate != nil || !context.adapters.isEmpty {
                try RequestBuilder.validate(method: Self.method(of: signed.urlRequest),
                                            headers: HTTPHeaders(signed.urlRequest.allHTTPHeaderFields ?? [:]))
            }
            try pin(&signed)
            send(signed, lookup: lookup, leg: leg, delegate: delegate, generation: generation)
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
        guard context.transport.canPinKeys else { throw failure(.transportCannotPin) }
        request.pinnedKeys = hashes
    }

    private func adapt(_ request: inout URLRequest, with adapter: any RequestAdapter) throws(APIError) {
        try APIError.catching({ .invalidRequest(.init(reason: .other("the adapter \(type(of: adapter)) stopped the request: \($0)"), method: Self.method(of: request).rawValue)) }) {
            try adapter.adapt(&request)
        }
    }

    /// Attempts again once `refresh` settles, or fails with its error.
    private func resume(after refresh: Promise<Void>, _ leg: Leg) {
        refresh.onResult(in: context.pipelineQueue) { [self] result in
            switch result {
            case .success: attempt(leg)
            case .failure(let error): finish(failed(error))
            }
        }
    }

    private func send(_ signed: TransportRequest, lookup: CacheLookup?, leg: Leg, delegate: (any APIDelegate)?, generation: Int) {
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
        // The attempt's delegate, read once as it began: the API keeps it behind its lock.
        let callsAppCode = context.callsAppCode(delegate: delegate)
        let sentFromJob = context.threadedTransport?.caller == .job
        let request = ranged
        guard case .send(let attempt) = machine.withLock({ $0.handle(.send(request.urlRequest)) }) else { return }
        context.plugins.forEach { $0.observe(.willSend(request.urlRequest), api: api.apiContext) }
        let startDate = Date()
        let startTime = DispatchTime.now().uptimeNanoseconds
        let timing: @Sendable () -> Response.Timing = {
            Response.Timing(start: startDate, duration: TimeInterval(DispatchTime.now().uptimeNanoseconds - startTime) / 1e9)
        }
        let collecting: ResponseCollector.Sink = switch sink {
        case .memory: .memory
        case .file(let file): .file(file)
        case .stream: .stream { [self] head, soFar in
            openStream(head, measured: soFar, for: request.urlRequest, attempt: attempt, delegate: delegate, timing: timing)
        }
        }
        // A head judged by the app's code is judged on the pipeline's queue, never the transport's thread.
        let collector = ResponseCollector(collecting, for: self, attempt: attempt, limit: signed.maximumBodySize, uploadLength: request.bodyLength, progress: progress,
                                          judgesHeadOn: callsAppCode ? context.pipelineQueue : nil) { [self] result, metrics in
            let timing = timing()
            let receive: @Sendable () -> Void = { [self] in
                received(result, for: request.urlRequest, attempt: attempt, metrics: metrics, leg: leg, delegate: delegate,
                         generation: generation, timing: timing)
            }
            let answered = if case .success = result { true } else { false }
            if EndPlacement.handlesElsewhere(caller: context.threadedTransport?.caller ?? .elsewhere, callsAppCode: callsAppCode,
                                             answered: answered, parses: parsesAnswer, sentFromJob: sentFromJob) {
                context.pipelineQueue.async(execute: receive)
            } else {
                receive()
            }
        }
        stream?.sending(request.urlRequest)
        let task = context.cacheStage?.send(request, lookup: lookup, through: context.transport, to: collector)
            ?? context.transport.send(request, to: collector)
        collector.attach(task)
        // Finished already (cancelled, timed out), or answered first (a redirect followed before
        // this returned): the task has nothing to do, unless its head opened the stream, which
        // the machine knows. Only the task the machine keeps is the stream's.
        if case .cancelTask(let task) = machine.withLock({ $0.handle(.started(task, attempt: attempt)) }) {
            task.cancel()
        } else {
            stream?.attach(task)
        }
    }

    /// Opens the stream on `head` when the pipeline would take it as the answer (not a redirect,
    /// accepted by validation, no refresh asked for), and settles the request with it, its body
    /// empty, its metrics the earlier exchanges' and what was `measured` of its own so far;
    /// returns `nil` to read the body as for any request (a redirect, an error's body).
    private func openStream(_ head: ResponseHead, measured: TransferMetrics?, for request: URLRequest, attempt: Int,
                            delegate: (any APIDelegate)?, timing: @escaping @Sendable () -> Response.Timing) -> StreamBuffer? {
        guard let stream, !(300..<400).contains(head.statusCode) else { return nil }
        let judged = Response(request: request, head: head, body: Data(), timing: timing())
        guard context.validation.accepts(judged) else { return nil }
        if let delegate, delegate.api(api, needsRefreshFor: head.urlResponse, data: Data(), request: request) { return nil }
        guard case .evaluate(_, let earlier) = machine.withLock({ $0.handle(.opened(attempt: attempt)) }) else { return nil }
        var response = Response(request: request, head: head, body: Data(), timing: judged.timing,
                                metrics: earlier + (measured.map { [$0] } ?? []))
        response.opensStream = true
        stream.open(onEnd: endReport(of: response, after: earlier, timing: timing))
        keepCookies(of: head, for: request)
        report(.success(response), for: request)
        stream.startTimers()
        finish(.answered(response, parser: context.parser))
        return stream
    }

    /// The jar's cookies for the request's URL, unless it brings its own `Cookie` or its chain has
    /// left the origin (from then on no credential goes out); the transport adds none of its own.
    private func addCookies(to request: inout URLRequest, leg: Leg) {
        guard let jar = context.cookieJar, !jar.isEmpty, !leg.hasLeftOrigin, let url = request.url,
              request.value(forHTTPHeaderField: "Cookie") == nil, let cookies = jar.headerValue(for: url) else { return }
        request.setValue(cookies, forHTTPHeaderField: "Cookie")
    }

    /// What tells plugins of a stream's end, off the transport's thread: its head's `response`
    /// timed to the end, with the earlier exchanges' metrics and its whole transfer's. `nil`
    /// when there are no plugins to tell.
    private func endReport(of response: Response, after earlier: [TransferMetrics],
                           timing: @escaping @Sendable () -> Response.Timing) -> StreamBuffer.EndReport? {
        let plugins = context.plugins
        guard !plugins.isEmpty else { return nil }
        let (apiContext, queue) = (api.apiContext, context.pipelineQueue)
        return { error, measured in
            let ended = Response(request: response.request, head: response.head, body: Data(), timing: timing(),
                                 metrics: earlier + (measured.map { [$0] } ?? []))
            queue.async { plugins.forEach { $0.observe(.didEndStream(ended, error: error), api: apiContext) } }
        }
    }

    /// Keeps the cookies a response sets, from any stop of the chain: each field on its own, as
    /// a browser reads them, when the transport handed them so.
    private func keepCookies(of head: ResponseHead, for request: URLRequest) {
        guard let jar = context.cookieJar, let url = request.url,
              let fields = head.setCookies ?? head.headers["Set-Cookie"].map(SetCookieFields.split), !fields.isEmpty else { return }
        jar.setCookies(from: fields, for: url)
    }

    /// Runs `body` on `attempt`'s exchange, under the request's one lock; `nil` once the request
    /// has moved past that attempt.
    func collecting<Result: Sendable>(_ attempt: Int, _ body: (inout ExchangeState) -> Result) -> Result? {
        machine.withLock { $0.collecting(attempt, body) }
    }

    // MARK: Stages 4 to 6: refresh, retry, or validate and parse

    private func received(
        _ result: Result<TransportResponse, ExchangeFailure>,
        for request: URLRequest,
        attempt: Int,
        metrics: TransferMetrics?,
        leg: Leg,
        delegate: (any APIDelegate)?,
        generation: Int,
        timing: Response.Timing
    ) {
        // Only the attempt on the wire counts; a late answer to a finished request is dropped.
        guard case .evaluate(let retries, let transfers) = machine.withLock({ $0.handle(.answered(attempt: attempt, metrics: metrics)) }) else { return }
        let method = Self.method(of: request)
        let failure: ExchangeFailure
        switch result {
        case .success(let raw):
            keepCookies(of: raw.head, for: request)
            let response = Response(request: request, head: raw.head, body: raw.body, timing: timing,
                                    metrics: transfers)
            report(.success(response), for: request)
            return evaluate(response, leg: leg, delegate: delegate, generation: generation, retries: retries)
        case .failure(let exchangeFailure):
            failure = exchangeFailure
        }
        switch failure.reading(method: method.rawValue, url: request.url) {
        case .cancelled:
            report(.failure(.cancelled), for: request)
            finish(.failed(.cancelled))
        case .restartDownload:
            report(.failure(.transportFailed(.init(underlying: DownloadRestart(), method: method.rawValue, url: request.url))), for: request)
            download?.discardBytes()
            context.pipelineQueue.async { self.attempt(leg) }
        case .failed(let error, let cause):
            report(.failure(error), for: request)
            // A file too large is not one to resume.
            if case .responseTooLarge = error { download?.discardBytes() }
            if let cause, context.retryPolicy.allowsRetry(method: method, retriesSoFar: retries, error: cause) {
                retry(leg, sent: request, retryAfter: nil, otherwise: error)
            } else {
                finish(.failed(error))
            }
        }
    }

    private func evaluate(_ response: Response, leg: Leg, delegate: (any APIDelegate)?, generation: Int, retries: Int) {
        // Only a 3xx can redirect: the rest skip the policy.
        if (300..<400).contains(response.statusCode), handledRedirect(response, from: leg) { return }
        if let delegate, delegate.api(api, needsRefreshFor: response.httpResponse, data: response.body, request: response.request) {
            guard case .refresh = machine.withLock({ $0.handle(.refused) }) else {
                return finish(.failed(.authentication(.stillUnauthorized(statusCode: response.statusCode))))
            }
            return resume(after: context.refresher.refresh(signedWith: generation, api: api, delegate: delegate), leg)
        }
        let accepted = context.validation.accepts(response)
        if !accepted, context.retryPolicy.allowsRetry(method: Self.method(of: response.request), retriesSoFar: retries, status: response.statusCode) {
            let retryAfter = RetryPolicy.retryAfter(response.headers["Retry-After"])
            return retry(leg, sent: response.request, retryAfter: retryAfter, otherwise: statusFailure(response))
        }
        finish(accepted ? .answered(response, parser: context.parser) : .failed(statusFailure(response)))
    }

    /// Sends the next leg when `response` is a redirect to follow, or fails the request when it
    /// is one that must not be followed; returns whether it did either.
    private func handledRedirect(_ response: Response, from leg: Leg) -> Bool {
        do {
            guard let next = try context.redirectPolicy.next(after: response.head, to: response.request, from: leg) else { return false }
            // Adapters and the delegate run on the pipeline queue, as for the first attempt, not
            // on the transport's, where they would hold up every other exchange.
            context.pipelineQueue.async { self.attempt(next) }
        } catch {
            finish(failed(error))
        }
        return true
    }

    /// Waits out the backoff, then attempts again; fails with `failure` when the budget is spent.
    private func retry(_ leg: Leg, sent: URLRequest, retryAfter: TimeInterval?, otherwise failure: APIError) {
        guard context.retryAccount.withdrawRetry(at: context.clock.now, budget: context.retryBudget) else {
            return finish(.failed(failure))
        }
        guard case .scheduleRetry(let retry) = machine.withLock({ $0.handle(.backOff) }) else { return }
        let delay = context.retryPolicy.delay(beforeRetry: retry, retryAfter: retryAfter) { Double.random(in: $0) }
        context.plugins.forEach { $0.observe(.didRetry(sent, retry: retry, delay: delay), api: api.apiContext) }
        let wait = context.clock.schedule(after: delay) { [self] in
            context.pipelineQueue.async { self.attempt(leg) }
        }
        run(.waiting(wait))
    }

    private func statusFailure(_ response: Response) -> APIError {
        .unacceptableStatus(.init(
            method: response.method, url: response.url, statusCode: response.statusCode,
            headers: response.headers, body: response.body, serverError: context.parser.serverError(from: response)
        ))
    }

    // MARK: Stage 7: settle once

    /// Cancels the request: the promise was cancelled.
    @usableFromInline
    func cancel() {
        finish(.failed(.cancelled))
    }

    /// Settles the promise, then stops what is left of the request. `stoppingOn`: where the
    /// network task is cancelled, when not right here; a timeout passes the pipeline queue, since
    /// FoundationNetworking cancels synchronously and slowly, and every timer of the clock waits
    /// behind the one that fired.
    private func finish(_ ending: Ending, stoppingOn queue: DispatchQueue? = nil) {
        guard case .settle(let leftovers) = machine.withLock({ $0.handle(.finish) }) else { return }
        leftovers.timer?.cancel()
        leftovers.wait?.cancel()
        if let file = leftovers.temporaryFile { try? FileManager.default.removeItem(at: file) }
        if let request = leftovers.attemptInFlight {
            let error = if case .failed(let error) = ending { error } else { APIError.cancelled }
            report(.failure(error), for: request)
        }
        settle(ending, attempt: leftovers.attemptInFlight)
        if let task = leftovers.task {
            if let queue { queue.async { task.cancel() } } else { task.cancel() }
        }
    }

    /// A response fulfills the promise unless it does not parse; failures reach plugins first.
    private func settle(_ ending: Ending, attempt: URLRequest?) {
        let failure: APIError
        switch ending {
        case .failed(let error):
            failure = error
        case .answered(let response, let parser):
            guard let error = settler.fulfill(decoding: response, parser: parser) else { return }
            failure = error
        }
        // A download that failed keeps its bytes if they can be resumed, and deletes them if not.
        download?.abandon()
        context.plugins.forEach { $0.observe(.didFail(failure, request: attempt), api: api.apiContext) }
        settler.reject(failure)
    }

    /// Hands `event` (one that announces a step: start, built, prepare, awaitCredentials, waiting)
    /// to the state machine and runs what it returns: whether the step goes on. What came too late
    /// for an ended request is stopped here.
    @discardableResult
    private func run(_ event: RequestStateMachine.Event) -> Bool {
        switch machine.withLock({ $0.handle(event) }) {
        case .proceed: return true
        case .cancel(let late): late.cancel()
        case .cancelTask(let task): task.cancel()
        case .deleteFile(let file): try? FileManager.default.removeItem(at: file)
        case .drop: break
        case let action:
            // The machine answers these only to events the stages hand it themselves.
            assertionFailure("the event \(event) cannot lead to \(action)")
        }
        return false
    }

    /// The ending for an error thrown by a stage: Tern's own errors as they are.
    private func failed(_ error: any Error) -> Ending {
        .failed(.wrapping(error) { .invalidRequest(.init(reason: .other("\($0)"))) })
    }

    /// Tells plugins how an attempt ended.
    private func report(_ result: Result<Response, APIError>, for request: URLRequest) {
        context.plugins.forEach { $0.observe(.didReceive(result, request: request), api: api.apiContext) }
    }

    /// The method a request went out with: encoders, adapters and the delegate may have changed
    /// the route's, and retries, errors and logs all go by what was sent.
    private static func method(of request: URLRequest) -> HTTPMethod {
        HTTPMethod(rawValue: request.httpMethod ?? HTTPMethod.get.rawValue)
    }
}
