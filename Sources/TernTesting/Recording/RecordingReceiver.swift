import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tern

/// Hears a real exchange for the pipeline, passing every event on, and keeps what it hears:
/// the head, each chunk and when it came, what the transport measured; at the end, the entry,
/// handed to `record` before the pipeline hears the end (so the file is written when the
/// request's promise settles), which returns the error writing it, if any.
///
/// A body longer than ``largestKeptBody`` is not kept: one whose head says so is stopped there,
/// unheard by the pipeline; another is let go of when it grows past, and the exchange, which a
/// recording cannot hold, fails at its end.
final class RecordingReceiver: TransportReceiver {
    /// The longest response body a recording keeps (its file holds it as text or Base64).
    static let largestKeptBody = 64 << 20

    private struct State {
        var head: ResponseHead?
        var body = Data()
        /// The body's length, once it outgrew what is kept.
        var tooLong: Int?
        var chunks: [HTTPArchive.Chunk] = []
        var last: TimeInterval
        var headAt: TimeInterval?
        var metrics: TransferMetrics?
        /// How the pipeline first ended the transfer, if it did: by a decision (a body over its
        /// size limit, say), or by cancelling it (a reader that left a stream, a cancel).
        var ended: PipelineEnd?
    }

    private let receiver: any TransportReceiver
    private let request: HTTPArchive.Request
    /// The names whose values the words of an error hide: the recording's secrets, and the
    /// request's credential headers.
    private let secrets: [String]
    private let clock: any APIClock
    private let started: Date
    private let startedAt: TimeInterval
    private let state: Locked<State>
    private let record: @Sendable (HTTPArchive.Entry) -> (any Error)?
    /// Told at the end, once the entry is written, before the pipeline hears it.
    private let ended: @Sendable () -> Void

    init(passingTo receiver: any TransportReceiver, request: HTTPArchive.Request, secrets: [String], clock: any APIClock,
         ended: @escaping @Sendable () -> Void, record: @escaping @Sendable (HTTPArchive.Entry) -> (any Error)?) {
        self.receiver = receiver
        self.request = request
        self.secrets = secrets
        self.clock = clock
        self.ended = ended
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
        // A body that says it is longer than a recording keeps fails here, before a byte of it
        // comes (a 200 MB download was fetched whole, and kept for a resume, only to fail).
        if let length = head.contentLength, length > Self.largestKeptBody,
           !ResponseHead.hasNoBody(statusCode: head.statusCode, method: request.method) {
            state.withLock { $0.tooLong = Int(clamping: length) }
            return .stop
        }
        state.withLock { state in
            state.head = head
            state.headAt = now
            state.last = now
        }
        return noted(receiver.didReceive(head))
    }

    /// How the pipeline ended a transfer.
    enum PipelineEnd {
        case stopped, cancelled
    }

    /// `decision`, noted when it stops the transfer.
    private func noted(_ decision: TransferDecision) -> TransferDecision {
        if case .stop = decision { noteEnd(.stopped) }
        return decision
    }

    /// Notes how the pipeline ended the transfer, unless it had already.
    func noteEnd(_ end: PipelineEnd) {
        state.withLock { $0.ended = $0.ended ?? end }
    }

    func didReceive(_ chunk: Data) -> TransferDecision {
        let now = clock.now
        state.withLock { state in
            if let length = state.tooLong {
                state.tooLong = length + chunk.count
            } else if state.body.count + chunk.count > Self.largestKeptBody {
                state.tooLong = state.body.count + chunk.count
                (state.body, state.chunks) = (Data(), [])
            } else {
                state.body.append(chunk)
                // To the tenth of a second: a shorter pause is the network's, not the server's
                // pace (a first chunk read a moment after its head would hold a replay on a test
                // clock until the test moved it, in some recordings and not others), and a
                // recording made again should not differ by milliseconds.
                let after = ((now - state.last) * 10).rounded() / 10
                // A chunk that came with the one before is kept as part of it: replayed alike,
                // and a stream of many small events is not a record each.
                if after == 0, let last = state.chunks.indices.last {
                    state.chunks[last].size += chunk.count
                } else {
                    state.chunks.append(HTTPArchive.Chunk(after: after, size: chunk.count))
                }
            }
            state.last = now
        }
        return noted(receiver.didReceive(chunk))
    }

    func didCollect(_ metrics: TransferMetrics) {
        state.withLock { $0.metrics = metrics }
        receiver.didCollect(metrics)
    }

    /// The end, after the entry is recorded; an exchange that went well fails if its entry
    /// could not be written.
    func didComplete(with error: (any Error)?) {
        if let (length, heard) = state.withLock({ state in state.tooLong.map { ($0, state.headAt != nil) } }) {
            ended()
            // Named as the file would keep it: a CI log keeps the words. Stopped at its head, the
            // exchange ends for that reason, whatever the transport says of the stop.
            let tooLong = TooLongToRecord(request: Redactor.redacted(request, secrets: secrets), length: length)
            return receiver.didComplete(with: heard ? error ?? tooLong : tooLong)
        }
        // A transfer the pipeline stopped before any cancel is kept as cut short, whatever the
        // transport says of the stop (URLSession's ends with no error, or now and then as
        // cancelled): kept whole, a body refused at its head replayed as an empty 200, and one
        // stopped midway as a shorter body; kept open, it waited for its timeout. One cancelled
        // first is a stream the client left (`_open`).
        let stoppedFirst = state.withLock { $0.ended == .stopped }
        let kept: (any Error)? = stoppedFirst && (error == nil || (error as? URLError)?.code == .cancelled) ? URLError(.unknown) : error
        let failure = entry(error: kept).flatMap(record)
        ended()
        receiver.didComplete(with: error ?? failure)
    }

    /// The exchange as an entry: its response, and the `URLError` it failed with, if it did
    /// (before a response came, or during its body); nothing for an exchange cancelled before
    /// its response, or failed otherwise.
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
            switch (error as? URLError)?.code {
            case nil where error == nil:
                break
            case .cancelled?:
                // A stream the client left while it went on: open on replay too.
                entry.open = true
            case let code?:
                // Cut short: replayed as far as it came, then failing the same way (a download
                // resumed from there, say).
                entry.error = code.rawValue
            case nil:
                return nil
            }
        } else {
            guard let error = error as? URLError, error.code != .cancelled else { return nil }
            entry.error = error.code.rawValue
            entry.response.statusText = ""
        }
        return entry
    }
}

/// A response too long for a recording to keep; its request with its secrets hidden.
struct TooLongToRecord: Error, CustomStringConvertible {
    let request: HTTPArchive.Request
    let length: Int

    var description: String {
        "The response to \(request.method) \(request.url) was \(length) bytes or more: longer than the \(RecordingReceiver.largestKeptBody >> 20) MiB a recording keeps, so it was not recorded."
    }
}
