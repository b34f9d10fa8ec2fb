import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Hears one exchange's events from the transport and gathers the response in memory, within
/// the request's body limit, for any transport alike: a declared length over the limit stops
/// the transfer before the body, and so does the chunk that passes it.
final class ResponseCollector: TransportReceiver {
    private struct State {
        var response: HTTPURLResponse?
        var body = Data()
        /// Why the collector stopped the transfer, reported instead of the error stopping causes.
        var stopped: BodyLimitExceeded?
    }

    private let limit: Int?
    private let completion: @Sendable (Result<TransportResponse, any Error>) -> Void
    // The transport calls one event at a time; the lock only makes that visible to the compiler,
    // and is never contended.
    private let state = Locked(State())

    init(limit: Int?, completion: @escaping @Sendable (Result<TransportResponse, any Error>) -> Void) {
        self.limit = limit
        self.completion = completion
    }

    func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {}

    func didReceive(_ response: HTTPURLResponse) -> TransferDecision {
        // Only an unencoded length says how large the body will be: the limit counts decompressed bytes.
        let declared = response.value(forHTTPHeaderField: "Content-Encoding") == nil ? response.expectedContentLength : -1
        return state.withLock { state in
            state.response = response
            if let limit, declared > limit {
                state.stopped = BodyLimitExceeded(limit: limit, receivedBytes: 0, declaredLength: Int(declared), statusCode: response.statusCode)
                return .stop
            }
            return .proceed
        }
    }

    func didReceive(_ chunk: Data) -> TransferDecision {
        state.withLock { state in
            guard state.stopped == nil else { return .stop }
            if let limit, state.body.count + chunk.count > limit {
                state.stopped = BodyLimitExceeded(limit: limit, receivedBytes: state.body.count + chunk.count,
                                                  statusCode: state.response?.statusCode)
                state.body = Data()
                return .stop
            }
            state.body.append(chunk)
            return .proceed
        }
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
