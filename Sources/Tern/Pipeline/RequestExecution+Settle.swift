import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Stage 7 of a request's trip: it settles once, whatever ends it, and stops what is left.
extension RequestExecution {
    /// Cancels the request: the promise was cancelled.
    @usableFromInline
    func cancel() {
        finish(.failed(.cancelled))
        // Cancelled once answered, as its file is delivered: the file is not moved into place, or
        // the cancel waits for a move under way, so the caller told "cancelled" finds the file
        // whole or kept for a resume, never half-handled (its resume record still beside it).
        download?.abandon()
    }

    /// Settles the promise, then stops what is left of the request. `stoppingOn`: where the
    /// network task is cancelled, when not right here; a timeout passes the pipeline queue, since
    /// FoundationNetworking cancels synchronously and slowly, and every timer of the clock waits
    /// behind the one that fired.
    func finish(_ ending: Ending, stoppingOn queue: DispatchQueue? = nil) {
        guard case .settle(let leftovers) = machine.withLock({ $0.handle(.finish) }) else { return }
        leftovers.timer?.cancel()
        leftovers.wait?.cancel()
        if let file = leftovers.temporaryFile { try? FileManager.default.removeItem(at: file) }
        if let request = leftovers.attemptInFlight {
            let error = if case .failed(let error) = ending { error } else { APIError.cancelled }
            report(.failure(error), for: request)
        }
        // A stream answered whole, never opened (a 3xx that validation accepts and that is not
        // followed): its reader gets that body and its end, not a wait for ever.
        if case .answered(let response, _) = ending, !response.opensStream, let stream {
            stream.deliver(whole: response.body)
        }
        // What the answers set is in the jar's file before the promise settles: a tool that
        // exits then finds its session in its next run.
        let settlesAfterAWrite = context.cookieJar?.whenWritten { [self] in
            context.pipelineQueue.async { self.settle(ending, attempt: leftovers.attemptInFlight) }
        } ?? false
        if !settlesAfterAWrite { settle(ending, attempt: leftovers.attemptInFlight) }
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
        case .answered:
            guard let error = settler.settle(ending) else { return }
            failure = error
        }
        // A download that failed keeps its bytes if they can be resumed, and deletes them if not.
        download?.abandon()
        context.plugins.forEach { $0.observe(.didFail(failure, request: attempt), api: pluginContext) }
        _ = settler.settle(.failed(failure))
    }

    /// Hands `event` (one that announces a step: start, built, prepare, awaitCredentials, waiting)
    /// to the state machine and runs what it returns: whether the step goes on. What came too late
    /// for an ended request is stopped here.
    @discardableResult
    func run(_ event: RequestStateMachine.Event) -> Bool {
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
    func failed(_ error: any Error) -> Ending {
        .failed(.wrapping(error) { .invalidRequest(.init(reason: .other("\($0)"))) })
    }

    /// Tells plugins how an attempt ended.
    func report(_ result: Result<Response, APIError>, for request: URLRequest) {
        context.plugins.forEach { $0.observe(.didReceive(result, request: request), api: pluginContext) }
    }

    /// The method a request went out with: encoders, adapters and the delegate may have changed
    /// the route's, and retries, errors and logs all go by what was sent.
    static func method(of request: URLRequest) -> HTTPMethod {
        HTTPMethod(rawValue: request.httpMethod ?? HTTPMethod.get.rawValue)
    }
}
