import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tern

/// Hears a real exchange for the pipeline, passing every event on, and keeps what it hears:
/// the head, each chunk and when it came, what the transport measured; at the end, the entry,
/// handed to `record` before the pipeline hears the end (so the file is written when the
/// request's promise settles), which returns the error writing it, if any.
final class RecordingReceiver: TransportReceiver {
    private struct State {
        var head: ResponseHead?
        var body = Data()
        var chunks: [HTTPArchive.Chunk] = []
        var last: TimeInterval
        var headAt: TimeInterval?
        var metrics: TransferMetrics?
    }

    private let receiver: any TransportReceiver
    private let request: HTTPArchive.Request
    private let clock: any APIClock
    private let started: Date
    private let startedAt: TimeInterval
    private let state: Locked<State>
    private let record: @Sendable (HTTPArchive.Entry) -> (any Error)?

    init(passingTo receiver: any TransportReceiver, request: HTTPArchive.Request, clock: any APIClock, record: @escaping @Sendable (HTTPArchive.Entry) -> (any Error)?) {
        self.receiver = receiver
        self.request = request
        self.clock = clock
        self.record = record
        started = Date()
        startedAt = clock.now
        state = Locked(State(last: clock.now))
    }

    func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {
        receiver.didSendBodyData(totalSent, of: totalExpected)
    }

    func didReceive(_ head: ResponseHead) -> TransferDecision {
        let now = clock.now
        state.withLock { state in
            state.head = head
            state.headAt = now
            state.last = now
        }
        return receiver.didReceive(head)
    }

    func didReceive(_ chunk: Data) -> TransferDecision {
        let now = clock.now
        state.withLock { state in
            state.body.append(chunk)
            state.chunks.append(HTTPArchive.Chunk(after: ((now - state.last) * 1000).rounded() / 1000, size: chunk.count))
            state.last = now
        }
        return receiver.didReceive(chunk)
    }

    func didCollect(_ metrics: TransferMetrics) {
        state.withLock { $0.metrics = metrics }
        receiver.didCollect(metrics)
    }

    /// The end, after the entry is recorded; an exchange that went well fails if its entry
    /// could not be written.
    func didComplete(with error: (any Error)?) {
        let failure = entry(error: error).flatMap(record)
        receiver.didComplete(with: error ?? failure)
    }

    /// The exchange as an entry: its response, or the `URLError` it failed with before one came;
    /// nothing for an exchange cancelled before its response, or failed otherwise.
    private func entry(error: (any Error)?) -> HTTPArchive.Entry? {
        let now = clock.now
        let (head, body, chunks, headAt, metrics) = state.withLock { ($0.head, $0.body, $0.chunks, $0.headAt, $0.metrics) }
        let milliseconds = { (seconds: TimeInterval?) in seconds.map { ($0 * 1_000_000).rounded() / 1000 } ?? -1 }
        let timings = HTTPArchive.Timings(
            blocked: -1, dns: milliseconds(metrics?.nameLookup), connect: milliseconds(metrics?.connect), send: 0,
            wait: milliseconds(headAt.map { $0 - startedAt }), receive: milliseconds(headAt.map { now - $0 }),
            ssl: milliseconds(metrics?.tlsHandshake))
        var entry = HTTPArchive.Entry(
            startedDateTime: ISO8601DateFormatter.string(from: started, timeZone: TimeZone(identifier: "UTC") ?? .current,
                                                         formatOptions: [.withInternetDateTime, .withFractionalSeconds]),
            time: milliseconds(now - startedAt), request: request,
            response: HTTPArchive.Response(status: 0), timings: timings)
        if let head {
            entry.response = HTTPArchive.response(head, body: body)
            // Pacing is kept where it tells: a body that came in more than one piece.
            if chunks.count > 1 { entry.chunks = chunks }
            if let error {
                // A stream the client left while it went on: open on replay too.
                guard (error as? URLError)?.code == .cancelled else { return nil }
                entry.open = true
            }
        } else {
            guard let error = error as? URLError, error.code != .cancelled else { return nil }
            entry.error = error.code.rawValue
            entry.response.statusText = ""
        }
        return entry
    }
}
