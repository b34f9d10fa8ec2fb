import Foundation

/// When a write to a file that other processes share (a cookie jar's, a recording) goes ahead
/// under their advisory lock, waits for it, or goes without. One writer's tries at the lock are
/// its events; each returns what to do next.
///
/// A holder keeps the lock for as long as one write takes, so a write's first try waits up to
/// ``patience`` for it. A holder kept longer (another process starved of the processor, or
/// stopped in a debugger) is not written past: its write would come after and drop this one's.
/// The write is tried again each second, without waiting, and with what changed meanwhile. A
/// holder stopped for good must not stop the writes for good: after ``longestWait`` the write
/// goes without the lock, and is owed again under it, to put back what the holder's own write
/// drops when it goes on.
package struct LockWait: Sendable {
    /// How long a write's first try waits for another holder: longer than a write takes.
    package static let patience: TimeInterval = 5
    /// How long a write tries for the lock before it goes without it.
    package static let longestWait: TimeInterval = 30

    /// What a try at the lock came to.
    package enum Tried: Sendable {
        case locked
        /// Another holder kept it past the patience asked for.
        case held
        /// No lock could be had at all (a file system without locks, a file that cannot be
        /// opened): nothing to wait for.
        case unavailable
    }

    /// What the writer does after a try.
    package enum Next: Equatable, Sendable {
        /// Writes now.
        case write
        /// Writes now without the lock; a write under it is owed.
        case writePastTheHolder
        /// Writes nothing now: what changed waits for a later try.
        case wait
    }

    /// When the write began to wait, while something waits to be written under the lock.
    private var waitingSince: Date?
    /// Whether a retry is due a second after a try that found the lock held.
    private var retryDue = false

    package init() {}

    /// Whether something waits to be written under the lock.
    package var isWaiting: Bool { waitingSince != nil }

    /// How long the next try waits for the lock: a write's first try ``patience``; a write
    /// behind one that waits already not at all, since a retry comes each second.
    package var nextPatience: TimeInterval { isWaiting ? 0 : Self.patience }

    /// Takes what a try came to, at `now`, and says what to do, and whether to try again a
    /// second from now (when no retry is due yet).
    package mutating func tried(_ tried: Tried, at now: Date = Date()) -> (next: Next, retry: Bool) {
        switch tried {
        case .locked, .unavailable:
            waitingSince = nil
            return (.write, false)
        case .held:
            let since = waitingSince ?? now
            let past = now.timeIntervalSince(since) >= Self.longestWait
            // Written past the holder, it waits again, for a write under the lock.
            waitingSince = past ? now : since
            defer { retryDue = true }
            return (past ? .writePastTheHolder : .wait, !retryDue)
        }
    }

    /// The retry due came: whether to try (something still waits to be written).
    package mutating func retryCame() -> Bool {
        retryDue = false
        return isWaiting
    }
}
