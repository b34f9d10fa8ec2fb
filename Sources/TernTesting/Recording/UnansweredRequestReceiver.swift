import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tern

/// Passes an exchange's events on, for a request the recording could not answer in `missing`
/// mode and sent: when sending fails before any answer (the server is down, the machine
/// offline), the error says that the recording has no answer for it, and which of its exchanges
/// came nearest. Otherwise a request the code under test changed fails as the network does, with
/// no word of the recording.
final class UnansweredRequestReceiver: TransportReceiver {
    private let receiver: any TransportReceiver
    private let unanswered: UnmatchedRequest
    private let file: String
    private let hasHead = Locked(false)

    init(passingTo receiver: any TransportReceiver, unanswered: UnmatchedRequest, file: URL) {
        self.receiver = receiver
        self.unanswered = unanswered
        self.file = file.lastPathComponent
    }

    func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {
        receiver.didSendBodyData(totalSent, of: totalExpected)
    }

    func didReceive(_ head: ResponseHead) -> TransferDecision {
        hasHead.withLock { $0 = true }
        return receiver.didReceive(head)
    }

    func didReceive(_ chunk: Data) -> TransferDecision {
        receiver.didReceive(chunk)
    }

    func didCollect(_ metrics: TransferMetrics) {
        receiver.didCollect(metrics)
    }

    func didComplete(with error: (any Error)?) {
        guard let failure = error as? URLError, failure.code != .cancelled, !hasHead.withLock({ $0 }) else {
            return receiver.didComplete(with: error)
        }
        var info = failure.userInfo
        info[NSLocalizedDescriptionKey] = "\(failure.localizedDescription); it was sent because the recording \(file) has no answer for it. \(unanswered)"
        info[NSUnderlyingErrorKey] = failure as NSError
        receiver.didComplete(with: URLError(failure.code, userInfo: info))
    }
}
