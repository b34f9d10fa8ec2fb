import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One request sent through a ``SessionExchanges``: waiting for its turn at its origin, then
/// running as a task. Cancelling it takes it out of the line, or cancels its task.
final class SessionRequest: ConnectionWaiting, Sendable {
    private enum Stage {
        case waiting
        case running(URLSessionTask)
        case cancelled
    }

    let request: TransportRequest
    let receiver: any TransportReceiver
    /// The origin it is counted against, or `nil` if none.
    let origin: String?
    /// The session its task runs in.
    let session: URLSession
    private let exchanges: SessionExchanges
    private let stage = Locked(Stage.waiting)

    init(_ request: TransportRequest, receiver: any TransportReceiver, origin: String?, session: URLSession, exchanges: SessionExchanges) {
        self.request = request
        self.receiver = receiver
        self.origin = origin
        self.session = session
        self.exchanges = exchanges
    }

    var isCancelled: Bool {
        stage.withLock { if case .cancelled = $0 { true } else { false } }
    }

    /// Records that `task` runs it; `false` if it was cancelled first.
    func started(_ task: URLSessionTask) -> Bool {
        stage.withLock { stage in
            guard case .waiting = stage else { return false }
            stage = .running(task)
            return true
        }
    }

    func cancel() {
        let before = stage.withLock { stage in
            defer { if case .waiting = stage { stage = .cancelled } }
            return stage
        }
        switch before {
        case .waiting:
            // Not in a line: it is being started, and its starter sees it cancelled.
            if exchanges.withdraw(self) { receiver.didComplete(with: URLError(.cancelled)) }
        case .running(let task):
            exchanges.cancel(task)
        case .cancelled:
            break
        }
    }

    var isWaitingForConnection: Bool {
        guard case .waiting = stage.withLock({ $0 }) else { return false }
        return exchanges.isWaiting(self)
    }

    func resumeReceiving() {
        guard case .running(let task) = stage.withLock({ $0 }) else { return }
        exchanges.resumeReceiving(task)
    }
}
