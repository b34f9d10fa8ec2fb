import Foundation

/// What one exchange (an attempt's transfer) has brought so far: the part of a request's state
/// that the transport's events change. It lives in the request's ``RequestStateMachine``, behind
/// the request's one lock, stamped with its attempt: events of an attempt the request has moved
/// past find no state, and stop their transfer.
struct ExchangeState {
    /// The attempt the exchange carries.
    let attempt: Int
    var head: ResponseHead?
    var body = Data()
    /// Whether the body goes to the download's file rather than to `body`.
    var isToFile = false
    /// Whether the body's progress is the request's: a download's file, or a success's body. A
    /// redirect's, a refused attempt's or an error's body is not the answer's, and reporting it
    /// would reach 1.0 and then go back.
    var reportsProgress = false
    /// The bytes the body started after: those a resumed download had on disk.
    var offset: Int64 = 0
    /// The body's bytes received.
    var received: Int64 = 0
    /// The body's whole length as announced (offset included), when it counts the bytes that arrive.
    var expectedLength: Int64?
    /// Why the collector stopped the transfer, reported instead of the error stopping causes.
    var stopped: (any Error)?
    /// Where an accepted streamed body goes, chunk by chunk, once its head opened it.
    var stream: StreamBuffer?
    /// What the transport measured of the exchange, if it did.
    var metrics: TransferMetrics?
    /// What it measured of exchanges it made before this one for the attempt (the cache's).
    var earlier: [TransferMetrics] = []
    /// While the app's code judges a streamed head elsewhere, or the download's file waits for
    /// a descriptor: what came meanwhile.
    var judging: Judging?
    /// The exchange's task, once the transport has made it: kept only while a head is judged
    /// elsewhere, or a download's file may have to wait.
    var task: (any TransportTask)?
    /// What the task is to do once attached (go on receiving, or stop), the head having been
    /// judged before it was.
    var owed: TransferDecision?
    /// Whether the head has come (it is judged before ``head`` is set).
    var hasHead = false
    /// Whether the exchange has ended: what was collected is handed on, and nothing is kept.
    var hasEnded = false
    /// The request body's bytes sent so far, as the transport reports them.
    var sent: Int64 = 0
    /// What the idle timeout's watch saw at its last look (see ``lookForProgress(waitingForConnection:timeout:)``).
    var idle = IdleWatch()

    /// Whether the exchange's end has come: taken, or waiting while its head is judged. What a
    /// transport reports after it belongs to nothing.
    var hasEndCome: Bool { hasEnded || judging?.end != nil }

    /// Hands over what was collected and keeps nothing more: the exchange has ended.
    mutating func end() -> ExchangeState {
        // Swapped out, not copied: a copy retained each part only to release it at once.
        var ended = ExchangeState(attempt: attempt, hasEnded: true)
        swap(&self, &ended)
        return ended
    }

    /// What a transport that cannot pause sent while a streamed head was being judged, or the
    /// download's file waited: replayed in order once it is.
    struct Judging {
        var chunks: [Data] = []
        /// The exchange's end, if it came: `error` as reported.
        var end: (any Error)??
        /// Whether it is the download's file that waits, and how many bytes are held for it.
        var waitsForFile = false
        var heldBytes = 0
    }

    /// The most held in memory while a download's file waits for a descriptor, from a transport
    /// that cannot hold the transfer back (URLSession): past it, the download fails.
    static let mostHeldWhileAFileWaits = 8 << 20
}
