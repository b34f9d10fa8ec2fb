import Foundation
import Testing
@testable import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A stream through an API with a cache says ``Response/cacheOutcome`` `.miss` at its head and
/// at an error end, over a transport that measures nothing before them (FoundationNetworking's
/// URLSession, or an app's own): CachingResponses.md promises `nil` only of an API without a
/// cache. Found by helper attack55: the cache's pass mode gave its word only with a successful
/// end, and a stream's head settles the request long before. The transport under test is
/// wrapped here so as to measure nothing.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct StreamCacheOutcomeTests {
    /// Hands every exchange to `base` and drops what it measured, as a transport that measures
    /// nothing does.
    final class MeasuresNothing: Transport {
        let base: any Transport

        init(base: any Transport) {
            self.base = base
        }

        func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
            base.send(request, to: Unmeasured(receiver: receiver))
        }

        struct Unmeasured: TransportReceiver {
            let receiver: any TransportReceiver
            func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) { receiver.didSendBodyData(totalSent, of: totalExpected) }
            func didReceive(_ head: ResponseHead) -> TransferDecision { receiver.didReceive(head) }
            func didReceive(_ chunk: Data) -> TransferDecision { receiver.didReceive(chunk) }
            func didComplete(with error: (any Error)?) { receiver.didComplete(with: error) }
        }
    }

    /// A stream through a cached API opens with a head that says `.miss`, as a request's
    /// response through the same API does (it says `.miss` at its end, where the cache's word
    /// comes today). A `POST` stream (a chat API's event stream) said nothing: the cache sends
    /// it as a request that invalidates, which gave no word before the head (helper read98).
    @Test(arguments: [HTTPMethod.get, .post])
    func aStreamsHeadThroughACachedAPISaysAMiss(method: HTTPMethod) async throws {
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                guard connection.send(RawServer.Connection.response("line\n")) else { return }
            }
        }
        defer { server.stop() }
        let transport = MeasuresNothing(base: TestTransport.make() ?? URLSessionTransport())
        let api = MetricsSeamAttackTests.api(cache: HTTPCache(), transport: transport)
        let plain: Response = try await api.request(route: .post(server.baseURL + "/tail")).value
        #expect(plain.cacheOutcome == .miss, "\(plain.metrics)")
        let stream = api.stream(route: Route(method: method, url: server.baseURL + "/tail"))
        var lines: [String] = []
        for try await line in stream.lines { lines.append(line) }
        let head = try await stream.response.value
        #expect(lines == ["line"] && head.statusCode == 200)
        #expect(head.cacheOutcome == .miss, "the stream's head says \(String(describing: head.cacheOutcome)): \(head.metrics)")
    }

    /// A stream through a cached API whose body stops coming: its idle timeout ends it, and the
    /// response plugins hear at its end says `.miss`, as its head does over libcurl.
    @Test func aStreamsErrorEndThroughACachedAPISaysAMiss() async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil,
                  connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\nfirst line\n") else { return }
            _ = connection.readAvailable(for: 30)
        }
        defer { server.stop() }
        let log = MetricsSeamAttackTests.Log()
        let transport = MeasuresNothing(base: TestTransport.make() ?? URLSessionTransport())
        let api = MetricsSeamAttackTests.api(cache: HTTPCache(), plugins: [log], transport: transport)
        let stream = api.stream(route: .get(server.baseURL + "/idle"), options: RequestOptions(streamIdleTimeout: 1))
        var lines: [String] = []
        await #expect(throws: APIError.self) {
            for try await line in stream.lines { lines.append(line) }
        }
        #expect(lines == ["first line"])
        #expect(await eventually { log.ends.count == 1 })
        #expect(log.ends.map(\.cacheOutcome) == [.miss], "the stream's end says \(log.ends.map(\.cacheOutcome)): \(log.ends.map(\.metrics))")
    }
}
