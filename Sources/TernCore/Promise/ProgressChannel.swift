import Dispatch

/// Carries a request's transfer progress to the observers of its promise (and of the promises
/// derived from it).
///
/// Reports are monotonic per direction: an attempt that starts over (a retry, a redirect)
/// reports again only once it passes what was already reported. They are coalesced per
/// observer: while a delivery waits for its queue, newer reports replace the waiting one, so a
/// download of a million chunks does not queue a million blocks.
///
/// A report's delivery is queued when the report comes, unless one is queued already, so that
/// on a serial queue it runs before whatever is queued after (the promise's result, for one).
/// One delivery runs at a time, so that reports arrive in order even on a concurrent queue: a
/// delivery that finds another running leaves its reports to that one.
@usableFromInline
package final class ProgressChannel: Sendable {
    private struct Observer {
        let queue: DispatchQueue
        let body: @Sendable (TransferProgress) -> Void
        /// The latest reports not yet delivered, upload first.
        var waiting: [TransferProgress] = []
        /// Whether a delivery is queued and has not started.
        var isQueued = false
        /// Whether a delivery is running.
        var isDelivering = false
    }

    private struct State {
        var observers: [Observer] = []
        var latestUpload: TransferProgress?
        var latestDownload: TransferProgress?
    }

    private let state = Locked(State())

    @usableFromInline
    package init() {}

    /// Adds an observer, who hears the latest reports at once if there are any.
    func observe(on queue: DispatchQueue, _ body: @escaping @Sendable (TransferProgress) -> Void) {
        let index = state.withLock { state -> Int? in
            let known = [state.latestUpload, state.latestDownload].compactMap { $0 }
            state.observers.append(Observer(queue: queue, body: body, waiting: known, isQueued: !known.isEmpty))
            return known.isEmpty ? nil : state.observers.count - 1
        }
        if let index { queue.async { self.drain(index) } }
    }

    /// Records a report and queues its delivery to every observer with none queued.
    package func report(_ progress: TransferProgress) {
        let scheduled = state.withLock { state -> [(Int, DispatchQueue)] in
            let latest = progress.direction == .upload ? state.latestUpload : state.latestDownload
            if let latest, progress.completedBytes <= latest.completedBytes, progress.totalBytes == latest.totalBytes { return [] }
            if progress.direction == .upload { state.latestUpload = progress } else { state.latestDownload = progress }
            var scheduled: [(Int, DispatchQueue)] = []
            for index in state.observers.indices {
                if !state.observers[index].isQueued {
                    state.observers[index].isQueued = true
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

    /// Delivers what waits, unless another delivery is running, which then delivers it. Goes on
    /// only with reports that a delivery queued meanwhile left to it (on a concurrent queue): one
    /// queued behind it delivers its own, so a steady stream of reports cannot hold a serial queue.
    private func drain(_ index: Int) {
        let body = state.withLock { state -> (@Sendable (TransferProgress) -> Void)? in
            state.observers[index].isQueued = false
            guard !state.observers[index].isDelivering else { return nil }
            state.observers[index].isDelivering = true
            return state.observers[index].body
        }
        guard let body else { return }
        while let reports = takeLeftReports(index) {
            reports.forEach(body)
        }
    }

    /// The reports waiting for observer `index` when no queued delivery will take them; `nil`,
    /// with the delivery marked over, when there are none or one will.
    private func takeLeftReports(_ index: Int) -> [TransferProgress]? {
        state.withLock { state in
            guard !state.observers[index].waiting.isEmpty, !state.observers[index].isQueued else {
                state.observers[index].isDelivering = false
                return nil
            }
            defer { state.observers[index].waiting = [] }
            return state.observers[index].waiting
        }
    }
}
