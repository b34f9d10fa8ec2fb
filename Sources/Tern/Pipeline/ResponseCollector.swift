import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Hears one exchange's events from the transport and gathers the response, for any transport
/// alike: in memory within the request's body limit (a declared length over the limit stops the
/// transfer before the body, and so does the chunk that passes it), or, for a download's
/// accepted body, into its file chunk by chunk. Reports the transfer's progress both ways.
final class ResponseCollector: TransportReceiver {
    private struct State {
        var head: ResponseHead?
        var body = Data()
        /// Whether the body goes to the download's file rather than to `body`.
        var isToFile = false
        /// The bytes the body started after: those a resumed download had on disk.
        var offset: Int64 = 0
        /// The body's bytes received.
        var received: Int64 = 0
        /// The body's whole length as announced (offset included), when it counts the bytes
        /// that arrive.
        var expectedLength: Int64?
        /// Why the collector stopped the transfer, reported instead of the error stopping causes.
        var stopped: (any Error)?
        /// Where an accepted streamed body goes, chunk by chunk, once its head opened it.
        var stream: StreamBuffer?
        /// What the transport measured of the exchange, if it did.
        var metrics: TransferMetrics?
    }

    private let limit: Int?
    /// The request body's length, when Tern knows it and the transport may not.
    private let uploadLength: Int64?
    private let file: DownloadFile?
    private let progress: ProgressChannel
    private let completion: @Sendable (Result<TransportResponse, any Error>, TransferMetrics?) -> Void
    /// For a streamed request: asked at the head whether the body is the stream's (the head
    /// was accepted), and returns the stream if so.
    private let opensStream: (@Sendable (ResponseHead) -> StreamBuffer?)?
    // The transport calls one event at a time; the lock only makes that visible to the compiler,
    // and is never contended.
    private let state = Locked(State())

    init(limit: Int?, uploadLength: Int64? = nil, file: DownloadFile? = nil, progress: ProgressChannel,
         opensStream: (@Sendable (ResponseHead) -> StreamBuffer?)? = nil,
         completion: @escaping @Sendable (Result<TransportResponse, any Error>, TransferMetrics?) -> Void) {
        self.limit = limit
        self.opensStream = opensStream
        self.uploadLength = uploadLength
        self.file = file
        self.progress = progress
        self.completion = completion
    }

    func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {
        // FoundationNetworking sends a stream without saying how long it is.
        progress.report(TransferProgress(direction: .upload, completedBytes: totalSent, totalBytes: totalExpected ?? uploadLength))
    }

    func didReceive(_ head: ResponseHead) -> TransferDecision {
        if let stream = opensStream?(head) {
            state.withLock { state in
                state.head = head
                state.stream = stream
            }
            return .proceed
        }
        var target = DownloadFile.Target.memory
        if let file {
            do {
                target = try file.target(for: head)
            } catch {
                state.withLock { $0.stopped = Self.writeFailure(error, writing: file) }
                return .stop
            }
        }
        let started = state.withLock { state -> TransferProgress? in
            state.head = head
            switch target {
            case .restart:
                state.stopped = DownloadRestart()
                return nil
            case .file(let offset, let total):
                state.isToFile = true
                state.offset = offset
                state.expectedLength = total
                if let limit = file?.maximumSize, let total, total > limit {
                    state.stopped = BodyLimitExceeded(limit: limit, receivedBytes: 0, declaredLength: Int(total), statusCode: head.statusCode)
                    return nil
                }
            case .memory:
                // Only an unencoded length says how large the body will be: the limit counts decompressed bytes.
                let declared = head.headers["Content-Encoding"] == nil ? head.contentLength ?? -1 : -1
                state.expectedLength = declared >= 0 ? declared : nil
                if let limit, declared > limit {
                    state.stopped = BodyLimitExceeded(limit: limit, receivedBytes: 0, declaredLength: Int(declared), statusCode: head.statusCode)
                    return nil
                }
            }
            return TransferProgress(direction: .download, completedBytes: state.offset, totalBytes: state.expectedLength)
        }
        guard let started else { return .stop }
        progress.report(started)
        return .proceed
    }

    func didReceive(_ chunk: Data) -> TransferDecision {
        var stream: StreamBuffer?
        let received = state.withLock { state -> TransferProgress? in
            stream = state.stream
            guard state.stopped == nil, stream == nil else { return nil }
            if state.isToFile, let file {
                if let limit = file.maximumSize, state.offset + state.received + Int64(chunk.count) > limit {
                    state.stopped = BodyLimitExceeded(limit: limit, receivedBytes: Int(state.offset + state.received) + chunk.count,
                                                      statusCode: state.head?.statusCode)
                    return nil
                }
                do {
                    try file.write(chunk)
                } catch {
                    state.stopped = error is CancellationError ? URLError(.cancelled) : Self.writeFailure(error, writing: file)
                    return nil
                }
            } else if let limit, state.body.count + chunk.count > limit {
                state.stopped = BodyLimitExceeded(limit: limit, receivedBytes: state.body.count + chunk.count,
                                                  statusCode: state.head?.statusCode)
                state.body = Data()
                return nil
            } else {
                state.body.append(chunk)
            }
            state.received += Int64(chunk.count)
            return TransferProgress(direction: .download, completedBytes: state.offset + state.received, totalBytes: state.expectedLength)
        }
        if let stream { return stream.offer(chunk) }
        guard let received else { return .stop }
        progress.report(received)
        return .proceed
    }

    /// Why the transfer stops when the download's file cannot be written.
    private static func writeFailure(_ error: any Error, writing file: DownloadFile) -> APIError {
        .fileFailed(.init(reason: .writeFailed, destination: file.destination, underlying: error))
    }

    func didCollect(_ metrics: TransferMetrics) {
        state.withLock { $0.metrics = metrics }
    }

    func didComplete(with error: (any Error)?) {
        let state = state.withLock { state in
            defer { state = State() }
            return state
        }
        // The request settled when the stream opened; the body's end is the stream's.
        if let stream = state.stream {
            return stream.finish(after: error, statusCode: state.head?.statusCode)
        }
        var error = error
        if error == nil, state.isToFile, let file {
            do { try file.endOfBody() } catch let failure { error = failure }
        }
        // FoundationNetworking reports a body cut short as an unknown error (libcurl's "partial
        // file"); Apple's URLSession, as what it is, which retry policies know.
        if (error as? URLError)?.code == .unknown, let expected = state.expectedLength, state.offset + state.received < expected {
            error = URLError(.networkConnectionLost, userInfo: (error as? URLError)?.userInfo ?? [:])
        }
        if let stopped = state.stopped {
            completion(.failure(stopped), state.metrics)
        } else if let tooLarge = error as? BodyLimitExceeded {   // a transport that stopped before the limit's bytes came
            completion(.failure(tooLarge), state.metrics)
        } else if let error, let head = state.head, (error as? URLError)?.code != .cancelled {  // a cancel stays a cancel
            completion(.failure(TransferInterrupted(head: head, receivedBytes: Int(state.received), underlying: error)), state.metrics)
        } else if let error {
            completion(.failure(error), state.metrics)
        } else if let head = state.head {
            completion(.success(TransportResponse(head: head, body: state.body)), state.metrics)
        } else {
            completion(.failure(URLError(.badServerResponse)), state.metrics)
        }
    }
}

/// Why a download's attempt was stopped at its head: the server did not go on where asked (it
/// answered 416, or a range other than the one asked for, or for a changed file), so the
/// attempt starts over from the first byte.
struct DownloadRestart: Error, CustomStringConvertible {
    var description: String { "The server did not send the rest of the download from where it stopped; starting over." }
}
