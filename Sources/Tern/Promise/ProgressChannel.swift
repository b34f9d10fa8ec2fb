import Dispatch

/// Carries a request's transfer progress to the observers of its promise (and of the promises
/// derived from it).
///
/// Reports are monotonic per direction: an attempt that starts over (a retry, a redirect)
/// reports again only once it passes what was already reported. They are coalesced per
/// observer: while a delivery waits for its queue, newer reports replace the waiting one, so a
/// download of a million chunks does not queue a million blocks. An observer has one delivery
/// scheduled at a time, so that its reports arrive in order even on a concurrent queue.
@usableFromInline
final class ProgressChannel: Sendable {
    private struct Observer {
        let queue: DispatchQueue
        let body: @Sendable (TransferProgress) -> Void
        /// The latest reports not yet delivered, upload first.
        var waiting: [TransferProgress] = []
        /// Whether a delivery is scheduled or running.
        var isDelivering = false
    }

    private struct State {
        var observers: [Observer] = []
        var latestUpload: TransferProgress?
        var latestDownload: TransferProgress?
    }

    private let state = Locked(State())

    @usableFromInline
    init() {}

    /// Adds an observer, who hears the latest reports at once if there are any.
    func observe(on queue: DispatchQueue, _ body: @escaping @Sendable (TransferProgress) -> Void) {
        let index = state.withLock { state -> Int? in
            let known = [state.latestUpload, state.latestDownload].compactMap { $0 }
            state.observers.append(Observer(queue: queue, body: body, waiting: known, isDelivering: !known.isEmpty))
            return known.isEmpty ? nil : state.observers.count - 1
        }
        if let index { queue.async { self.drain(index) } }
    }

    /// Records a report and schedules its delivery to every observer not already scheduled.
    func report(_ progress: TransferProgress) {
        let scheduled = state.withLock { state -> [(Int, DispatchQueue)] in
            let latest = progress.direction == .upload ? state.latestUpload : state.latestDownload
            if let latest, progress.completedBytes <= latest.completedBytes, progress.totalBytes == latest.totalBytes { return [] }
            if progress.direction == .upload { state.latestUpload = progress } else { state.latestDownload = progress }
            var scheduled: [(Int, DispatchQueue)] = []
            for index in state.observers.indices {
                if !state.observers[index].isDelivering {
                    state.observers[index].isDelivering = true
                    scheduled.append((index, state.observers[index].queue))
                }
                state.observers[index].waiting.removeAll { $0.direction == progress.direction }
                state.observers[index].waiting.append(progress)
            }
            return scheduled
        }
        for (index, queue) in scheduled {
            queue.async { self.drain(index) }
        }
    }

    /// Delivers what waits, then schedules itself again if more came meanwhile: a new block,
    /// not a loop, so that a steady stream of reports cannot hold a serial queue.
    private func drain(_ index: Int) {
        let (body, reports) = state.withLock { state in
            defer { state.observers[index].waiting = [] }
            return (state.observers[index].body, state.observers[index].waiting)
        }
        reports.forEach(body)
        let again = state.withLock { state -> DispatchQueue? in
            guard !state.observers[index].waiting.isEmpty else {
                state.observers[index].isDelivering = false
                return nil
            }
            return state.observers[index].queue
        }
        again?.async { self.drain(index) }
    }
}
