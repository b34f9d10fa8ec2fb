import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the idle timeout's watch of an attempt saw at its last look: it looks four times in a
/// timeout's span, so an attempt that moved no byte since is given up between one timeout and
/// one and a quarter after its last byte, with one timer and nothing on the path of each chunk.
struct IdleWatch {
    /// Looks in a row that found nothing moved before the attempt is given up.
    static let looksPerTimeout = 4

    /// What one look finds.
    enum Look {
        /// Something moved, or not for long enough: look again.
        case goOn
        /// Nothing moved for the timeout: the attempt fails with `URLError.timedOut`.
        case timedOut
        /// The attempt is over: ended, or the request has moved past it (a stream's open body is
        /// the stream's, with its own idle timeout).
        case over
    }

    /// The exchange's progress at the last look: bytes both ways, and its head; `-1` before any.
    var progress: Int64 = -1
    /// Looks in a row that found `progress` unchanged.
    var quietLooks = 0
}

extension ExchangeState {
    /// Looks at how far the exchange has come: it times out, its transfer to be stopped, when
    /// nothing moved for ``IdleWatch/looksPerTimeout`` looks in a row, the span of `timeout`. A
    /// request waiting for a connection (behind others to its host) has not stalled, nor one that
    /// Tern holds: its streamed head judged by the app's code elsewhere, or its download's file
    /// waiting for a descriptor (what comes meanwhile is held, ``ExchangeState/Judging``).
    mutating func lookForProgress(waitingForConnection: Bool, timeout: TimeInterval) -> IdleWatch.Look {
        guard !hasEndCome else { return .over }
        let progress = sent + received + Int64(judging?.heldBytes ?? 0) + (hasHead ? 1 : 0)
        guard !waitingForConnection, judging == nil, progress == idle.progress else {
            idle = IdleWatch(progress: progress)
            return .goOn
        }
        idle.quietLooks += 1
        guard idle.quietLooks >= IdleWatch.looksPerTimeout else { return .goOn }
        // Foundation's words for the code name no cause on Linux.
        let words = "The request went \(timeout) s with no byte sent or received, its idle timeout."
        stopped = URLError(.timedOut, userInfo: [NSLocalizedDescriptionKey: words])
        return .timedOut
    }
}

extension RequestExecution {
    /// Gives `attempt` up once no byte has moved either way for `timeout`, looking four times in
    /// its span: its transfer is stopped, and it fails as timed out, for the retry policy to judge.
    func watchIdle(_ attempt: Int, task: any TransportTask, timeout: TimeInterval) {
        let period = timeout / Double(IdleWatch.looksPerTimeout)
        _ = context.clock.schedule(after: period) { [self] in
            // Asked outside the lock: the task takes its own.
            let waiting = (task as? any ConnectionWaiting).map { $0.isWaitingForConnection || $0.isWaitingForADescriptor } ?? false
            switch machine.withLock({ $0.lookForProgress(attempt, waitingForConnection: waiting, timeout: timeout) }) {
            case .goOn: watchIdle(attempt, task: task, timeout: timeout)
            case .timedOut: task.cancel()
            case .over: break
            }
        }
    }
}
