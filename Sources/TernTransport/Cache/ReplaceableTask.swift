/// A task whose exchange another may take over: the cache's revalidation, sent again without
/// its conditions when the server's `304` confirms another response. Cancelling it cancels the
/// exchange going on now, whichever that is.
final class ReplaceableTask: TransportTask {
    private struct State {
        var current: (any TransportTask)?
        var replaced = false
        var cancelled = false
    }

    private let state = Locked(State())

    /// The first exchange's task, unless the second has taken over already (the first can end,
    /// and the second start, before the first's `send` returns).
    func begin(_ task: any TransportTask) {
        let cancelled = state.withLock { state in
            if !state.replaced { state.current = task }
            return state.cancelled
        }
        if cancelled { task.cancel() }
    }

    /// The exchange that takes over.
    func replace(with task: any TransportTask) {
        let cancelled = state.withLock { state in
            (state.current, state.replaced) = (task, true)
            return state.cancelled
        }
        if cancelled { task.cancel() }
    }

    func cancel() {
        state.withLock { state in
            state.cancelled = true
            return state.current
        }?.cancel()
    }

    func resumeReceiving() {
        state.withLock { $0.current }?.resumeReceiving()
    }
}
