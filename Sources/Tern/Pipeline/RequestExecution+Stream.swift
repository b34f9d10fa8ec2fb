import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A streamed request's head: whether it opens the stream, and who hears the stream's end.
extension RequestExecution {
    /// Opens the stream on `head` when the pipeline would take it as the answer (not a redirect,
    /// accepted by validation, no refresh asked for), and settles the request with it, its body
    /// empty, its metrics the earlier exchanges' and what was `measured` of its own so far;
    /// returns `nil` to read the body as for any request (a redirect, an error's body).
    func openStream(_ head: ResponseHead, measured: TransferMetrics?, of sent: SentAttempt) -> StreamBuffer? {
        let (request, delegate) = (sent.request, sent.signer?.delegate)
        guard let stream, !(300..<400).contains(head.statusCode) else { return nil }
        // A head after the deadline is late, as an answer is (see `received`): no stream opens.
        if context.clock.now - askedAt >= context.timeout {
            timedOut(after: context.timeout)
            return nil
        }
        let judged = Response(request: request, head: head, body: Data(), timing: sent.timing())
        guard context.validation.accepts(judged) else { return nil }
        if let delegate, delegate.api(api, needsRefreshFor: head.urlResponse, data: Data(), request: request) { return nil }
        guard case .evaluate(_, let earlier) = machine.withLock({ $0.handle(.opened(attempt: sent.attempt)) }) else { return nil }
        var response = Response(request: request, head: head, body: Data(), timing: judged.timing,
                                metrics: earlier + (measured.map { [$0] } ?? []))
        response.opensStream = true
        stream.open(onEnd: endReport(of: response, after: earlier, sent: sent))
        keepCookies(of: head, for: request)
        report(.success(response), for: request)
        stream.startTimers()
        finish(.answered(response, parser: context.parser))
        return stream
    }

    /// What tells plugins of a stream's end, off the transport's thread: its head's `response`
    /// timed to the end, with the earlier exchanges' metrics and its whole transfer's. `nil`
    /// when there are no plugins to tell.
    private func endReport(of response: Response, after earlier: [TransferMetrics], sent: SentAttempt) -> StreamBuffer.EndReport? {
        let plugins = context.plugins
        guard !plugins.isEmpty else { return nil }
        let (apiContext, queue) = (pluginContext, context.pipelineQueue)
        return { error, measured in
            let ended = Response(request: response.request, head: response.head, body: Data(), timing: sent.timing(),
                                 metrics: earlier + (measured.map { [$0] } ?? []))
            queue.async { plugins.forEach { $0.observe(.didEndStream(ended, error: error), api: apiContext) } }
        }
    }
}
