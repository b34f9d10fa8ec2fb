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
/// It is not generic: only ``Settle``, made where the value type is known, touches the value.
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

    /// Settles the request's promise, specialized for its value type. Given an answer, it
    /// decodes it and fulfills the promise, or returns the parsing failure without settling,
    /// so that plugins hear of it first; given a failure, it rejects and returns `nil`.
    @usableFromInline
    typealias Settle = @Sendable (Ending) -> APIError?

    private let api: AbstractAPI
    private let route: Route
    private let parameters: (any RequestParameters)?
    private let options: RequestOptions
    private let settle: Settle
    private let plugins: [any Plugin]
    private let progress: ProgressChannel
    /// The file a download's body goes to; `nil` for a request whose body goes to memory.
    private let download: DownloadFile?
    private let state = Locked(State())

    private struct State {
        /// The network task of the attempt in flight.
        var task: (any TransportTask)?
        /// The attempt in flight, whose `didReceive` is still owed to plugins.
        var attemptInFlight: URLRequest?
        /// The request's overall timeout.
        var timer: (any Cancellable)?
        /// A retry's backoff being waited out.
        var wait: (any Cancellable)?
        var temporaryFile: URL?
        /// The request as built, for a timeout's error before any attempt.
        var built: URLRequest?
        var retries = 0
        var replayedAfterRefresh = false
        var isFinished = false
    }

    @usableFromInline
    init(
        api: AbstractAPI,
        route: Route,
        parameters: (any RequestParameters)?,
        options: RequestOptions,
        progress: ProgressChannel,
        download: DownloadFile? = nil,
        settle: @escaping Settle
    ) {
        self.api = api
        self.progress = progress
        self.download = download
        self.route = route
        self.parameters = parameters
        self.options = options
        self.settle = settle
        plugins = api.plugins + options.plugins
    }

    private var parser: any ResponseParser { options.parser ?? api.responseParser }
    private var retryPolicy: RetryPolicy { options.retryPolicy ?? api.configuration.retryPolicy }
    private var redirectPolicy: RedirectPolicy { options.redirectPolicy ?? api.configuration.redirectPolicy }

    /// The delegate that signs and refreshes for `leg`: none once the chain has left the origin.
    private func delegate(for leg: Leg) -> (any APIDelegate)? {
        options.authenticates && !leg.hasLeftOrigin ? api.delegate : nil
    }

    // MARK: Stage 1: build, once

    /// Runs on the API's pipeline queue.
    @usableFromInline
    func start() {
        // Cancelled before the pipeline got to it: build nothing (a multipart body means a file).
        guard keep({ _ in }) else { return }
        let timeout = options.timeout ?? api.configuration.timeout
        guard timeout > 0 else {  // NaN too
            return finish(.failed(.invalidRequest(.init(reason: .invalidTimeout(timeout), method: route.method.rawValue))))
        }
        // The timeout spans the whole request from here: building its body, every attempt, refreshes.
        if timeout.isFinite {
            let timer = api.clock.schedule(after: timeout) { [self] in timedOut(after: timeout) }
            guard keep({ $0.timer = timer }) else { return timer.cancel() }
        }
        do {
            let (request, temporaryFile) = try RequestBuilder.build(
                route: route,
                parameters: parameters,
                timeout: timeout,
                cachePolicy: options.cachePolicy ?? api.configuration.cachePolicy,
                commonHeaders: api.configuration.commonHeaders,
                acceptHeader: parser.acceptHeader,
                maximumBodySize: (options.maximumResponseSize ?? api.configuration.maximumResponseSize).bytes,
                isCancelled: { [self] in state.withLock { $0.isFinished } }
            )
            // Timed out or cancelled while the body was being written: nobody will send it.
            guard keep({ $0.temporaryFile = temporaryFile; $0.built = request.urlRequest }) else {
                if let temporaryFile { try? FileManager.default.removeItem(at: temporaryFile) }
                return
            }
            api.retryAccount.recordRequest(at: api.clock.now, budget: api.configuration.retryBudget)
            attempt(Leg(request))
        } catch {
            finish(failed(error))
        }
    }

    private func timedOut(after interval: TimeInterval) {
        let request = state.withLock { $0.attemptInFlight ?? $0.built }
        let method = request.map(Self.method(of:)) ?? route.method
        let timeout = APIError.timeout(.init(interval: interval, method: method.rawValue, url: request?.url ?? URL(string: route.url)))
        finish(.failed(timeout), stoppingOn: api.pipelineQueue)
    }

    // MARK: Stages 2 and 3: wait for credentials, adapt, sign, send

    private func attempt(_ leg: Leg) {
        let request = leg.request
        // Read once: the weak reference sits behind the API's lock, which every request shares.
        let delegate = delegate(for: leg)
        // Requests do not go out with credentials that are being replaced.
        if delegate != nil, let refresh = api.refresher.inFlight {
            return resume(after: refresh, leg)
        }
        if let delegate, delegate.api(api, needsRefreshBeforeSending: request.urlRequest) {
            let refresh = api.refresher.refresh(signedWith: api.refresher.generation, api: api, delegate: delegate)
            return resume(after: refresh, leg)
        }
        do {
            var signed = request
            let adapters = api.configuration.adapters
            for adapter in adapters {
                try adapt(&signed.urlRequest, with: adapter)
            }
            // An adapter may add credentials to every request; they too stay at their origin.
            if leg.hasLeftOrigin { leg.removeCredentials(from: &signed.urlRequest, policy: redirectPolicy) }
            let generation = delegate == nil ? 0 : api.refresher.generation
            if let delegate {
                try APIError.catching({ .invalidRequest(.init(reason: .other("the delegate stopped the request: \($0)"), method: Self.method(of: request.urlRequest).rawValue)) }) {
                    try delegate.api(api, willSend: &signed.urlRequest)
                }
            }
            // What adapters and the delegate set is checked like everything else; the rest was
            // checked when the request was built.
            if delegate != nil || !adapters.isEmpty {
                try RequestBuilder.validate(method: Self.method(of: signed.urlRequest),
                                            headers: HTTPHeaders(signed.urlRequest.allHTTPHeaderFields ?? [:]))
            }
            send(signed, leg: leg, generation: generation)
        } catch {
            finish(failed(error))
        }
    }

    private func adapt(_ request: inout URLRequest, with adapter: any RequestAdapter) throws(APIError) {
        try APIError.catching({ .invalidRequest(.init(reason: .other("the adapter \(type(of: adapter)) stopped the request: \($0)"), method: Self.method(of: request).rawValue)) }) {
            try adapter.adapt(&request)
        }
    }

    /// Attempts again once `refresh` settles, or fails with its error.
    private func resume(after refresh: Promise<Void>, _ leg: Leg) {
        refresh.onResult(in: api.pipelineQueue) { [self] result in
            switch result {
            case .success: attempt(leg)
            case .failure(let error): finish(failed(error))
            }
        }
    }

    private func send(_ signed: TransportRequest, leg: Leg, generation: Int) {
        var ranged = signed
        // A download goes on from the bytes it has, if it can.
        download?.prepare(&ranged.urlRequest)
        let request = ranged
        guard keep({ $0.attemptInFlight = request.urlRequest }) else { return }
        plugins.forEach { $0.willSend(request.urlRequest, api: api) }
        let startDate = Date()
        let startTime = DispatchTime.now().uptimeNanoseconds
        let collector = ResponseCollector(limit: request.maximumBodySize, uploadLength: request.bodyLength, file: download, progress: progress) { [self] result in
            let duration = TimeInterval(DispatchTime.now().uptimeNanoseconds - startTime) / 1e9
            received(result, for: request.urlRequest, leg: leg, generation: generation,
                     timing: Response.Timing(start: startDate, duration: duration))
        }
        let task = api.transport.send(request, to: collector)
        if !keep({ $0.task = task }) { task.cancel() }
    }

    // MARK: Stages 4 to 6: refresh, retry, or validate and parse

    private func received(
        _ result: Result<TransportResponse, any Error>,
        for request: URLRequest,
        leg: Leg,
        generation: Int,
        timing: Response.Timing
    ) {
        // Only the attempt in flight counts; a late answer to a finished request is dropped.
        let retries = state.withLock { state -> Int? in
            guard !state.isFinished, state.attemptInFlight != nil else { return nil }
            state.attemptInFlight = nil
            state.task = nil
            return state.retries
        }
        guard let retries else { return }
        let method = Self.method(of: request)
        switch result {
        case .failure(let error as URLError) where error.code == .cancelled:
            report(.failure(.cancelled), for: request)
            finish(.failed(.cancelled))
        case .failure(let restart as DownloadRestart):
            report(.failure(.transportFailed(.init(underlying: restart, method: method.rawValue, url: request.url))), for: request)
            download?.discardBytes()
            api.pipelineQueue.async { self.attempt(leg) }
        case .failure(let failure as APIError):  // the download's file could not be written
            report(.failure(failure), for: request)
            finish(.failed(failure))
        case .failure(let error as BodyLimitExceeded):
            let failure = APIError.responseTooLarge(.init(
                limit: error.limit, receivedBytes: error.receivedBytes, declaredLength: error.declaredLength,
                method: method.rawValue, url: request.url, statusCode: error.statusCode
            ))
            report(.failure(failure), for: request)
            finish(.failed(failure))
        case .failure(let error):
            let interrupted = error as? TransferInterrupted
            let cause = interrupted?.underlying ?? error
            let failure = APIError.transportFailed(.init(
                underlying: cause, method: method.rawValue, url: request.url,
                statusCode: interrupted?.response.statusCode, receivedBytes: interrupted?.receivedBytes
            ))
            report(.failure(failure), for: request)
            if retryPolicy.allowsRetry(method: method, retriesSoFar: retries, error: cause) {
                retry(leg, sent: request, retryAfter: nil, otherwise: failure)
            } else {
                finish(.failed(failure))
            }
        case .success(let raw):
            let response = Response(request: request, httpResponse: raw.httpResponse, body: raw.body, timing: timing)
            report(.success(response), for: request)
            evaluate(response, leg: leg, generation: generation, retries: retries)
        }
    }

    private func evaluate(_ response: Response, leg: Leg, generation: Int, retries: Int) {
        // Only a 3xx can redirect: the rest skip the policy.
        if (300..<400).contains(response.statusCode), handledRedirect(response, from: leg) { return }
        if let delegate = delegate(for: leg), delegate.api(api, needsRefreshFor: response.httpResponse, data: response.body, request: response.request) {
            let alreadyReplayed = state.withLock { state in
                defer { state.replayedAfterRefresh = true }
                return state.replayedAfterRefresh
            }
            guard !alreadyReplayed else {
                return finish(.failed(.authentication(.stillUnauthorized(statusCode: response.statusCode))))
            }
            return resume(after: api.refresher.refresh(signedWith: generation, api: api, delegate: delegate), leg)
        }
        let accepted = (options.validation ?? api.configuration.validation).accepts(response)
        if !accepted, retryPolicy.allowsRetry(method: Self.method(of: response.request), retriesSoFar: retries, status: response.statusCode) {
            let retryAfter = RetryPolicy.retryAfter(response.headers["Retry-After"])
            return retry(leg, sent: response.request, retryAfter: retryAfter, otherwise: statusFailure(response))
        }
        finish(accepted ? .answered(response, parser: parser) : .failed(statusFailure(response)))
    }

    /// Sends the next leg when `response` is a redirect to follow, or fails the request when it
    /// is one that must not be followed; returns whether it did either.
    private func handledRedirect(_ response: Response, from leg: Leg) -> Bool {
        do {
            guard let next = try redirectPolicy.next(after: response.httpResponse, to: response.request, from: leg) else { return false }
            // Adapters and the delegate run on the pipeline queue, as for the first attempt, not
            // on the transport's, where they would hold up every other exchange.
            api.pipelineQueue.async { self.attempt(next) }
        } catch {
            finish(failed(error))
        }
        return true
    }

    /// Waits out the backoff, then attempts again; fails with `failure` when the budget is spent.
    private func retry(_ leg: Leg, sent: URLRequest, retryAfter: TimeInterval?, otherwise failure: APIError) {
        guard api.retryAccount.withdrawRetry(at: api.clock.now, budget: api.configuration.retryBudget) else {
            return finish(.failed(failure))
        }
        let policy = retryPolicy
        let retry = state.withLock { state in
            state.retries += 1
            return state.retries
        }
        let delay = policy.delay(beforeRetry: retry, retryAfter: retryAfter) { Double.random(in: $0) }
        plugins.forEach { $0.didRetry(sent, retry: retry, after: delay, api: api) }
        let wait = api.clock.schedule(after: delay) { [self] in
            api.pipelineQueue.async { self.attempt(leg) }
        }
        if !keep({ $0.wait = wait }) { wait.cancel() }
    }

    private func statusFailure(_ response: Response) -> APIError {
        .unacceptableStatus(.init(
            method: response.method, url: response.url, statusCode: response.statusCode,
            headers: response.headers, body: response.body, serverError: parser.serverError(from: response)
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
        let leftovers = state.withLock { state -> State? in
            guard !state.isFinished else { return nil }
            defer { state = State(isFinished: true) }
            return state
        }
        guard let leftovers else { return }
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

    /// A response settles the promise unless it does not parse; failures reach plugins first.
    private func settle(_ ending: Ending, attempt: URLRequest?) {
        let failure: APIError
        switch ending {
        case .failed(let error):
            failure = error
        case .answered:
            guard let error = settle(ending) else { return }
            failure = error
        }
        plugins.forEach { $0.didFail(failure, request: attempt, api: api) }
        _ = settle(.failed(failure))
    }

    /// The ending for an error thrown by a stage: Tern's own errors as they are.
    private func failed(_ error: any Error) -> Ending {
        .failed(.wrapping(error) { .invalidRequest(.init(reason: .other("\($0)"))) })
    }

    /// Tells plugins how an attempt ended.
    private func report(_ result: Result<Response, APIError>, for request: URLRequest) {
        plugins.forEach { $0.didReceive(result, for: request, api: api) }
    }

    /// The method a request went out with: encoders, adapters and the delegate may have changed
    /// the route's, and retries, errors and logs all go by what was sent.
    private static func method(of request: URLRequest) -> HTTPMethod {
        HTTPMethod(rawValue: request.httpMethod ?? HTTPMethod.get.rawValue)
    }

    /// Changes the state unless the request has finished; returns whether it had not.
    private func keep(_ change: (inout State) -> Void) -> Bool {
        state.withLock { state in
            guard !state.isFinished else { return false }
            change(&state)
            return true
        }
    }
}

