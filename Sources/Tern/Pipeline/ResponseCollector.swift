import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Hears one exchange's events from the transport and gathers the response in memory, within
/// the request's body limit, for any transport alike: a declared length over the limit stops
/// the transfer before the body, and so does the chunk that passes it. Reports the transfer's
/// progress both ways.
final class ResponseCollector: TransportReceiver {
    private struct State {
        var response: HTTPURLResponse?
        var body = Data()
        /// The body's length as announced, when it counts the bytes that arrive.
        var expectedLength: Int64?
        /// Why the collector stopped the transfer, reported instead of the error stopping causes.
        var stopped: BodyLimitExceeded?
    }

    private let limit: Int?
    private let progress: ProgressChannel
    private let completion: @Sendable (Result<TransportResponse, any Error>) -> Void
    // The transport calls one event at a time; the lock only makes that visible to the compiler,
    // and is never contended.
    private let state = Locked(State())

    init(limit: Int?, progress: ProgressChannel, completion: @escaping @Sendable (Result<TransportResponse, any Error>) -> Void) {
        self.limit = limit
        self.progress = progress
        self.completion = completion
    }

    func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {
        progress.report(TransferProgress(direction: .upload, completedBytes: totalSent, totalBytes: totalExpected))
    }

    func didReceive(_ response: HTTPURLResponse) -> TransferDecision {
        // Only an unencoded length says how large the body will be: the limit counts decompressed bytes.
        let declared = response.value(forHTTPHeaderField: "Content-Encoding") == nil ? response.expectedContentLength : -1
        let decision = state.withLock { state -> TransferDecision in
            state.response = response
            state.expectedLength = declared >= 0 ? declared : nil
            if let limit, declared > limit {
                state.stopped = BodyLimitExceeded(limit: limit, receivedBytes: 0, declaredLength: Int(declared), statusCode: response.statusCode)
                return .stop
            }
            return .proceed
        }
        if decision == .proceed {
            progress.report(TransferProgress(direction: .download, completedBytes: 0, totalBytes: declared >= 0 ? declared : nil))
        }
        return decision
    }

    func didReceive(_ chunk: Data) -> TransferDecision {
        let received = state.withLock { state -> TransferProgress? in
            guard state.stopped == nil else { return nil }
            if let limit, state.body.count + chunk.count > limit {
                state.stopped = BodyLimitExceeded(limit: limit, receivedBytes: state.body.count + chunk.count,
                                                  statusCode: state.response?.statusCode)
                state.body = Data()
                return nil
            }
            state.body.append(chunk)
            return TransferProgress(direction: .download, completedBytes: Int64(state.body.count), totalBytes: state.expectedLength)
        }
        guard let received else { return .stop }
        progress.report(received)
        return .proceed
    }

    func didComplete(with error: (any Error)?) {
        let state = state.withLock { state in
            defer { state = State() }
            return state
        }
        if let stopped = state.stopped {
            completion(.failure(stopped))
        } else if let error, let response = state.response, (error as? URLError)?.code != .cancelled {  // a cancel stays a cancel
            completion(.failure(TransferInterrupted(response: response, receivedBytes: state.body.count, underlying: error)))
        } else if let error {
            completion(.failure(error))
        } else if let response = state.response {
            completion(.success(TransportResponse(httpResponse: response, body: state.body)))
        } else {
            completion(.failure(URLError(.badServerResponse)))
        }
    }
}
