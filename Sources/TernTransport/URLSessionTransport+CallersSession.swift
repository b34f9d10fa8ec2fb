import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLSessionTransport {
    /// A session that is not ours has no delegate of ours: its completion handlers get whole
    /// bodies, reported to the receiver as events.
    func sendThroughCallersSession(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
        let exchange = CallersSessionExchange()
        let handler: @Sendable (Data?, URLResponse?, (any Error)?) -> Void = { data, response, error in
            let (declined, kept) = exchange.ended()
            @Sendable func answer(_ response: HTTPURLResponse) {
                #if canImport(FoundationNetworking)
                if let problem = ResponseHeadCheck.problem(with: response) {
                    return receiver.didComplete(with: ResponseHeadCheck.refusal(problem, url: response.url))
                }
                #endif
                if receiver.didReceive(ResponseHead(response)) != .stop, let data, !data.isEmpty { _ = receiver.didReceive(data) }
                receiver.didComplete(with: nil)
            }
            if let error {
                // A cancel Tern did not ask for: the session's delegate declined a challenge,
                // whose answer (a 401), when the task kept it, is the response.
                guard declined, (error as? URLError)?.code == .cancelled else { return receiver.didComplete(with: error) }
                return kept.map(answer) ?? receiver.didComplete(with: URLError(.userCancelledAuthentication))
            }
            guard let response = response as? HTTPURLResponse else { return receiver.didComplete(with: URLError(.badServerResponse)) }
            answer(response)
        }
        guard let (urlRequest, uploadFile) = Self.prepared(request, reportingTo: receiver) else { return NoTask() }
        let task = if let uploadFile {
            session.uploadTask(with: urlRequest, fromFile: uploadFile, completionHandler: handler)
        } else {
            session.dataTask(with: urlRequest, completionHandler: handler)
        }
        // Tern follows redirects itself. Before task delegates (Apple's 2021 releases) the
        // caller's session follows them, and Apple's URLSession drops `Authorization` on each.
        if #available(macOS 12, iOS 15, tvOS 15, watchOS 8, *) {
            exchange.start(task)
            return exchange
        }
        task.resume()
        return task
    }
}

/// A task on a caller's session, whose redirects it refuses: the session follows none, and the
/// 3xx is the response; unless the task was cancelled first (``RedirectOrCancel``).
@available(macOS 12, iOS 15, tvOS 15, watchOS 8, *)
private final class CallersSessionExchange: NSObject, URLSessionTaskDelegate, SilentUntilItEnds, Sendable {
    private struct State {
        /// Until the task ends: the task holds this as its delegate.
        var task: URLSessionTask?
        var redirectOrCancel = RedirectOrCancel()
    }

    private let state = Locked(State())

    /// Starts `task`, with this as its delegate.
    func start(_ task: URLSessionTask) {
        state.withLock { $0.task = task }
        task.delegate = self
        task.resume()
    }

    /// The task has ended: whether a cancel ended it that Tern did not ask for (the session's
    /// delegate declined a challenge), and the response it had.
    func ended() -> (declined: Bool, response: HTTPURLResponse?) {
        state.withLock { state in
            defer { state.task = nil }
            // A task never started here (on Apple releases before 2021) Tern cancels itself.
            guard let task = state.task else { return (false, nil) }
            return (!state.redirectOrCancel.isCancelled, task.response as? HTTPURLResponse)
        }
    }

    func cancel() {
        state.withLock { $0.redirectOrCancel.cancel() ? $0.task : nil }?.cancel()
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        if state.withLock({ $0.redirectOrCancel.refuseRedirect() }) { completionHandler(nil) }
    }
}
