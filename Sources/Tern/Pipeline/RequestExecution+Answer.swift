import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stages 4 to 6 of a request's trip: what an attempt's answer leads to (a refresh, a retry, a
/// redirect's next leg, or validation and the end).
extension RequestExecution {
    /// Takes the end of `sent`'s exchange, if the request is still waiting for it.
    func received(_ result: Result<TransportResponse, ExchangeFailure>, metrics: TransferMetrics?, earlier: [TransferMetrics], of sent: SentAttempt,
                  timing: Response.Timing) {
        let (request, attempt, leg) = (sent.request, sent.attempt, sent.leg)
        // Only the attempt on the wire counts; a late answer to a finished request is dropped.
        guard case .evaluate(let retries, let transfers) = machine.withLock({ $0.handle(.answered(attempt: attempt, metrics: metrics, earlier: earlier)) }) else { return }
        // After the deadline the answer is late, whether or not the timer has run yet (a busy or
        // suspended machine runs it late): the request times out as it would have.
        if context.clock.now - askedAt >= context.timeout { return timedOut(after: context.timeout, answered: request) }
        let failure: ExchangeFailure
        switch result {
        case .success(let raw):
            keepCookies(of: raw.head, for: request)
            var response = Response(request: request, head: raw.head, body: raw.body, timing: timing,
                                    metrics: transfers)
            if let download, raw.body.isEmpty { response.fileLength = download.length }
            report(.success(response), for: request)
            return evaluate(response, leg: leg, signer: sent.signer, generation: sent.generation, retries: retries)
        case .failure(let exchangeFailure):
            if let head = exchangeFailure.head, exchangeFailure.error is BodyLimitExceeded,
               context.redirectPolicy.followsAtItsHead(head) {
                // A redirect's body is not the answer: over the limit, it is cut, and the next
                // leg goes on.
                keepCookies(of: head, for: request)
                let response = Response(request: request, head: head, body: Data(), timing: timing, metrics: transfers)
                report(.success(response), for: request)
                if handledRedirect(response, from: leg) { return }
            }
            failure = exchangeFailure
        }
        // Read only on failure: a `URLRequest`'s method is costly to read on Linux.
        let method = Self.method(of: request)
        switch failure.reading(method: method.rawValue, url: request.url, isDownload: download != nil) {
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

    private func evaluate(_ response: Response, leg: Leg, signer: Signer?, generation: Int, retries: Int) {
        // Only a 3xx can redirect: the rest skip the policy.
        if (300..<400).contains(response.statusCode), handledRedirect(response, from: leg) { return }
        // An answer the cache alone gave (offline) is not refreshed for: the refresh would go to
        // the network the request must not reach, and another attempt finds the same answer.
        if let signer, !answersFromTheCacheAlone(response.request),
           signer.delegate.api(api, needsRefreshFor: response.httpResponse, data: response.body, request: response.request) {
            // Replaced, or being replaced by a refresh another request started since it was signed.
            let replaced = generation < signer.refresher.generation || signer.refresher.inFlight != nil
            guard case .refresh = machine.withLock({ $0.handle(.refused(replaced: replaced)) }) else {
                return finish(.failed(.authentication(.stillUnauthorized(statusCode: response.statusCode))))
            }
            return resume(after: signer.refresh(signedWith: generation, for: api), leg)
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
        // Asked to wait longer than the policy does: the answer says more than a retry sent too soon.
        if let retryAfter, !context.retryPolicy.waits(retryAfter) { return finish(.failed(failure)) }
        guard context.retryAccount.withdrawRetry(at: context.clock.now, budget: context.retryBudget) else {
            return finish(.failed(failure))
        }
        guard case .scheduleRetry(let retry) = machine.withLock({ $0.handle(.backOff) }) else { return }
        let delay = context.retryPolicy.delay(beforeRetry: retry, retryAfter: retryAfter) { Double.random(in: $0) }
        // A retry that could only begin after the deadline is not waited for: the answer that
        // asked for it (a 429, say) says more than a timeout would.
        if context.clock.now + delay - askedAt >= context.timeout { return finish(.failed(failure)) }
        context.plugins.forEach { $0.observe(.didRetry(sent, retry: retry, delay: delay), api: pluginContext) }
        let wait = context.clock.schedule(after: delay) { [self] in
            context.pipelineQueue.async { self.attempt(leg) }
        }
        run(.waiting(wait, retry: retry))
    }

    private func statusFailure(_ response: Response) -> APIError {
        .unacceptableStatus(.init(
            method: response.method, url: response.url, statusCode: response.statusCode,
            headers: response.headers, body: response.body, serverError: context.parser.serverError(from: response)
        ))
    }
}
