#if os(Linux)
import CTernCurl
import Foundation

/// How the loop waits for work: awake for a moment after an answer that ran alone, else asleep
/// in libcurl's poll until what is put in the inbox wakes it.
extension CurlLoop {
    /// How long the loop stays awake for the next request after one that ran alone, in
    /// nanoseconds: longer than a caller sending one request after another takes to send the
    /// next once the last was delivered. Finding the loop awake spares it a wakeup and the loop
    /// a sleep, which save about the CPU the wait costs, and a good share of the time per
    /// request (see the Benchmarks article). After the last request of a burst the wait costs at
    /// most this much; a caller whose requests come further apart than this costs it once, not
    /// per request.
    static let lingering: UInt64 = 50_000

    /// Whether a request that `arrived` came soon enough after the report of the last answer,
    /// which began and ended then, for the loop to wait for the next one (all uptime
    /// nanoseconds). Timed from the report's end, when the loop would begin to wait: an answer
    /// decoded while it is reported, which takes longer than the wait, does not make its caller
    /// slow. A request that came during the report is timed from its beginning: the machine held
    /// the report up, and a caller who sent long after its answer is not one to wait for.
    static func cameSoon(_ arrived: UInt64, afterReportBegan began: UInt64, ended: UInt64) -> Bool {
        arrived <= (arrived < ended ? began : ended) + lingering
    }

    /// Marks the loop asleep, should it not be (asleep and marked awake, it would not be woken by
    /// what is put in, which would wait until its poll timed out), and says which origins are
    /// full; returns whether work waits, which the loop then takes before it sleeps: starts to
    /// full origins are put in without waking it.
    func fallAsleep() -> Bool {
        let (full, everyOriginFull) = (state.fullOrigins, state.everyOriginFull)
        return inbox.withLock { inbox in
            if inbox.isAwake {
                inbox.isAwake = false
                inbox.sleepsMarkedAwake += 1
            }
            inbox.fullOrigins = full
            inbox.everyOriginFull = everyOriginFull
            return inbox.hasWaitingWork
        }
    }

    /// Waits up to ``lingering`` for work, yielding the core to any thread that wants it;
    /// returns whether work came. Marks the loop asleep before returning none, so that what
    /// comes after wakes it.
    func lingerForWork() -> Bool {
        inbox.withLock { $0.lingers += 1 }
        let deadline = DispatchTime.now().uptimeNanoseconds + Self.lingering
        repeat {
            if inbox.withLock(\.hasWork) { return true }
            sched_yield()
        } while DispatchTime.now().uptimeNanoseconds < deadline
        return inbox.withLock { inbox in
            inbox.isAwake = false
            return inbox.hasWork
        }
    }
}
#endif
