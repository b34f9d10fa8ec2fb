import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the pipeline makes of a transport that reports an exchange as events, and what it tells
/// the transport back.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct StreamingTransportTests {
    /// A transport that reports a scripted exchange as events, on another thread, and records
    /// what the receiver decided after each one.
    final class EventTransport: Transport {
        struct Script: Sendable {
            var status = 200
            var headers: [String: String] = [:]
            var chunks: [Data] = []
            /// Reported instead of a complete end, after the chunks.
            var error: (any Error)?
        }

        let script: Script
        let decisions = Recorder<String>()
        let chunksOffered = Recorder<Int>()

        init(_ script: Script) {
            self.script = script
        }

        func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
            DispatchQueue.global().async { [self] in
                receiver.didSendBodyData(0, of: nil)
                let head = HTTPURLResponse(url: request.urlRequest.url!, statusCode: script.status, httpVersion: "HTTP/1.1", headerFields: script.headers)!
                var decision = receiver.didReceive(ResponseHead(head))
                decisions.append("head \(decision)")
                for chunk in script.chunks where decision == .proceed {
                    chunksOffered.append(chunk.count)
                    decision = receiver.didReceive(chunk)
                    decisions.append("chunk \(decision)")
                }
                // Stopping is reported as the cancellation it causes.
                receiver.didComplete(with: decision == .stop ? URLError(.cancelled) : script.error)
            }
            return NoTask()
        }
    }

    func api(_ transport: EventTransport, limit: SizeLimit = .megabytes(64)) throws -> TestAPI {
        try TestAPI(baseURL: "https://stream.invalid", configuration: APIConfiguration(maximumResponseSize: limit, retryPolicy: .never), transport: transport)
    }

    @Test func chunksAreJoinedInOrder() async throws {
        let chunks = (0..<50).map { index in Data(repeating: UInt8(index), count: 1000 + index) }
        let transport = EventTransport(.init(chunks: chunks))
        let body: Data = try await api(transport).request(route: .get("https://stream.invalid/x")).value
        #expect(body == chunks.reduce(Data(), +))
        #expect(transport.decisions.items.allSatisfy { $0.hasSuffix("proceed") })
    }

    @Test func theReceiverStopsAtTheChunkThatPassesTheLimit() async throws {
        let transport = EventTransport(.init(chunks: Array(repeating: Data(count: 400), count: 10)))
        guard let failure = await tooLarge(try api(transport, limit: 1000).request(route: .get("https://stream.invalid/x")) as Promise<Data>) else { return }
        #expect(failure.receivedBytes == 1200)
        #expect(failure.statusCode == 200)
        #expect(transport.decisions.items == ["head proceed", "chunk proceed", "chunk proceed", "chunk stop"])
        #expect(transport.chunksOffered.items.count == 3)
    }

    @Test func aDeclaredLengthOverTheLimitStopsBeforeTheBody() async throws {
        let transport = EventTransport(.init(headers: ["Content-Length": "5000"], chunks: [Data(count: 5000)]))
        guard let failure = await tooLarge(try api(transport, limit: 1000).request(route: .get("https://stream.invalid/x")) as Promise<Data>) else { return }
        #expect(failure.declaredLength == 5000)
        #expect(transport.decisions.items == ["head stop"])
        #expect(transport.chunksOffered.items.isEmpty)
    }

    @Test func anErrorAfterTheHeadSaysTheResponseHadBegun() async throws {
        let transport = EventTransport(.init(status: 206, chunks: [Data(count: 300)], error: URLError(.networkConnectionLost)))
        let error = await apiError(of: try api(transport).request(route: .get("https://stream.invalid/x")) as Promise<Data>)
        guard case .transportFailed(let failure)? = error else {
            Issue.record("expected transportFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.statusCode == 206)
        #expect(failure.receivedBytes == 300)
        #expect(failure.urlError?.code == .networkConnectionLost)
    }

    @Test func aCancellationAfterTheHeadStaysACancellation() async throws {
        let transport = EventTransport(.init(chunks: [Data(count: 10)], error: URLError(.cancelled)))
        let error = await apiError(of: try api(transport).request(route: .get("https://stream.invalid/x")) as Promise<Data>)
        #expect(error?.caseName == "cancelled")
    }
}
