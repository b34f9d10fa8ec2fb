/// A task whose exchange another may take over: the cache's revalidation, sent again without
/// its conditions when the server's `304` confirms another response. Cancelling it cancels the
/// exchange going on now, whichever that is.
final class ReplaceableTask: TransportTask {
    private struct State {
        var current: (any TransportTask)?
        var replaced = false
        var cancelled = false
        /// Whether a resume came while no exchange's task was there to take it: before the
        /// first's `send` returned, or while the second's is being sent.
        var owesResume = false

        /// Makes `task` the current exchange's; returns what it is owed: to stop, to go on.
        mutating func take(_ task: any TransportTask) -> (cancel: Bool, resume: Bool) {
            defer { owesResume = false }
            current = task
            return (cancelled, owesResume)
        }
    }

    private let state = Locked(State())

    /// The first exchange's task, unless the second has taken over already (the first can end,
    /// and the second start, before the first's `send` returns).
    func begin(_ task: any TransportTask) {
        let owed = state.withLock { state in state.replaced ? (state.cancelled, false) : state.take(task) }
        Self.obey(owed, task)
    }

    /// The exchange that takes over, which `send` starts: the first has ended, and a resume
    /// asked for meanwhile is the second's.
    func replace(by send: () -> any TransportTask) {
        state.withLock { state in (state.current, state.replaced) = (nil, true) }
        let task = send()
        Self.obey(state.withLock { $0.take(task) }, task)
    }

    private static func obey(_ owed: (cancel: Bool, resume: Bool), _ task: any TransportTask) {
        if owed.cancel { task.cancel() } else if owed.resume { task.resumeReceiving() }
    }

    func cancel() {
        state.withLock { state in
            state.cancelled = true
            return state.current
        }?.cancel()
    }

    func resumeReceiving() {
        state.withLock { state in
            if state.current == nil { state.owesResume = true }
            return state.current
        }?.resumeReceiving()
    }
}
