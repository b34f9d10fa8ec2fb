import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tern

/// A transport may report events of an exchange after its end (a hostile or broken one does).
/// Once the request has moved on to a retry, the first attempt's late events belong to nothing:
/// they must neither reach the retry's answer nor report progress.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct LateAttemptEventsTests {
    /// The first attempt loses its connection; as the retry goes out, and again once it is
    /// answered, the first attempt's receiver is told of chunks, a head and an end, all too late.
    final class LateTransport: Transport, @unchecked Sendable {   // unchecked: `receivers` behind `lock`
        struct Task: TransportTask { func cancel() {} }
        private let lock = NSLock()
        private var receivers: [any TransportReceiver] = []
        private var isDone = false
        /// Whether the retry's `send` has reported everything.
        var hasReportedAll: Bool { lock.withLock { isDone } }
        var taskExecutor: (any TaskExecutor)? { nil }

        func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
            let earlier: (any TransportReceiver)? = lock.withLock {
                receivers.append(receiver)
                return receivers.count > 1 ? receivers[0] : nil
            }
            let url = request.urlRequest.url!
            guard let earlier else {
                receiver.didComplete(with: URLError(.networkConnectionLost))
                return Task()
            }
            let head = ResponseHead(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headers: ["Content-Length": "4"])!
            _ = earlier.didReceive(Data("EVIL-BYTES-".utf8))
            _ = receiver.didReceive(head)
            _ = receiver.didReceive(Data("good".utf8))
            receiver.didComplete(with: nil)
            // And after the retry's answer: the request may have settled.
            _ = earlier.didReceive(Data("EVIL-BYTES-FROM-BEFORE".utf8))
            _ = earlier.didReceive(head)
            earlier.didComplete(with: nil)
            lock.withLock { isDone = true }
            return Task()
        }
    }

    @Test func anEarlierAttemptsLateEventsChangeNothing() async throws {
        let transport = LateTransport()
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: RetryPolicy(maxRetries: 1, baseDelay: 0.01, jitter: false)),
                              transport: transport, responseQueue: .global())
        let reported = Locked<[Int64]>([])
        let progressQueue = DispatchQueue(label: "late.progress")
        let body: Data = try await api.request(route: .get("https://late.invalid/thing"))
            .onProgress(in: progressQueue) { progress in reported.withLock { $0.append(progress.completedBytes) } }
            .value
        #expect(String(decoding: body, as: UTF8.self) == "good")
        #expect(await eventually(timeout: 10) { transport.hasReportedAll })
        progressQueue.sync {}   // every report the transport's events made has been delivered
        #expect(!reported.withLock { $0 }.isEmpty)
        #expect(reported.withLock { $0 }.allSatisfy { $0 <= 4 }, "progress counted the late bytes: \(reported.withLock { $0 })")
    }
}
