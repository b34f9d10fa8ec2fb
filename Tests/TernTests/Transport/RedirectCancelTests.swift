import Foundation
import Testing
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Cancels that meet a redirect over URLSessionTransport. FoundationNetworking hands a `3xx` to
/// its session's delegate and waits for the answer; a cancel that came meanwhile ended the
/// process when the answer came ("Received callback for HTTP redirection, but we're not waiting
/// for it"). Every exchange here ends once, whole or cancelled, and the process lives on.
// Each test but the exit tests has a time limit: an exit test waits its turn behind the others.
@Suite(.onTestThreads) struct RedirectCancelTests {
    /// Whichever comes first wins, and the other is refused: never both.
    @Test(.timeLimit(.minutes(3))) func aCancelAndARedirectsRefusalExcludeEachOther() {
        var cancelledFirst = RedirectOrCancel()
        let cancels = [cancelledFirst.cancel(), cancelledFirst.cancel()]
        let refusedAfter = cancelledFirst.refuseRedirect()
        #expect(cancels == [true, true] && !refusedAfter && !cancelledFirst.isRedirectRefused)
        var refusedFirst = RedirectOrCancel()
        let refused = refusedFirst.refuseRedirect()
        let cancelledAfter = refusedFirst.cancel()
        #expect(refused && !cancelledAfter && !refusedFirst.isCancelled)
    }

    #if os(Linux)
    /// Over the transport's own session, and over a caller's.
    @Test(.exitTest, arguments: [false, true])
    func cancelsMeetingRedirectsEndTheExchangeAndNotTheProcess(callersSession: Bool) async throws {
        let server = try LoopbackServer { _ in
            ServerResponse(status: 307, headers: ["Location": "/elsewhere"], body: Data("moved".utf8))
        }
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent, \.standardErrorContent]) { [url = server.baseURL as String, callersSession] in
                let transport = callersSession ? URLSessionTransport(session: URLSession(configuration: .ephemeral)) : URLSessionTransport()
                var outcomes: [String: Int] = [:]
                for index in 0..<3_000 {
                    let ended = EndSignal()
                    let request = TransportRequest(urlRequest: URLRequest(url: URL(string: url + "/from/\(index)")!))
                    let task = transport.send(request, to: ended)
                    // From at once to a millisecond in, around the moment the 3xx arrives: spun,
                    // not slept, for a wait shorter than a sleep's.
                    let cancelAt = DispatchTime.now().uptimeNanoseconds + UInt64((index * 7_919) % 1_000) * 1_000
                    while DispatchTime.now().uptimeNanoseconds < cancelAt {}
                    task.cancel()
                    outcomes[ended.wait(), default: 0] += 1
                }
                print(outcomes.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", "))
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let complained = String(decoding: (child?.standardErrorContent ?? []).suffix(2_000), as: UTF8.self)
        // Both outcomes are expected over 3,000 tries, and nothing else.
        #expect(printed.contains("307:") && printed.contains("cancelled:") && !printed.contains("other"), "\(printed)\n\(complained)")
    }
    #endif
}

/// Hears an exchange to its end, and says how it ended: the status of a whole answer, or
/// `cancelled`.
private final class EndSignal: TransportReceiver, @unchecked Sendable {
    private let ended = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var status: Int?
    private var outcome = "other: no end"

    func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {}
    func didReceive(_ head: ResponseHead) -> TransferDecision {
        lock.withLock { status = head.statusCode }
        return .proceed
    }
    func didReceive(_ chunk: Data) -> TransferDecision { .proceed }
    func didComplete(with error: (any Error)?) {
        lock.withLock {
            switch (error as? URLError)?.code {
            case nil where error == nil: outcome = status.map(String.init) ?? "other: no head"
            case .cancelled?: outcome = "cancelled"
            default: outcome = "other: \(String(describing: error))"
            }
        }
        ended.signal()
    }

    /// Waits for the end, for a minute at most.
    func wait() -> String {
        guard ended.wait(timeout: .now() + 60) == .success else { return "other: no end in a minute" }
        return lock.withLock { outcome }
    }
}
