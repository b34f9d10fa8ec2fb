import Foundation
import Testing
@testable import Tern
@testable import TernCore
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a stream tells of its transfers: at its head, the earlier hops' metrics and what is
/// known of its own so far; at its end, however it ends, its whole transfer's, through the
/// plugins' ``PluginEvent/didEndStream(_:error:)``. Against raw socket servers, over the
/// transport under test: libcurl measures, FoundationNetworking measures nothing (the metrics
/// are empty there, the timing Tern's own).
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct StreamMetricsTests {
    /// Each event a plugin hears, in order.
    final class EventLog: Plugin {
        let events = Locked([PluginEvent]())

        func observe(_ event: PluginEvent, api: APIContext) {
            events.withLock { $0.append(event) }
        }

        /// The events as words: `willSend /path`, `didReceive 200`, `didEndStream 200 timeout`.
        var words: [String] {
            events.withLock { $0 }.map { event in
                switch event {
                case .willSend(let request): "willSend \(request.url?.path ?? "")"
                case .didReceive(.success(let response), _): "didReceive \(response.statusCode)"
                case .didReceive(.failure(let error), _): "didReceive \(error.caseName)"
                case .didEndStream(let response, let error): "didEndStream \(response.statusCode) \(error?.caseName ?? "complete")"
                case .didRetry(_, let retry, _): "didRetry \(retry)"
                case .didRefresh: "didRefresh"
                case .didFail(let error, _): "didFail \(error.caseName)"
                }
            }
        }

        /// The heads plugins were given.
        var heads: [Response] {
            events.withLock { $0 }.compactMap { if case .didReceive(.success(let response), _) = $0 { response } else { nil } }
        }

        /// The stream's end, once it has been told.
        var end: (response: Response, error: APIError?)? {
            events.withLock { $0 }.lazy.compactMap { if case .didEndStream(let response, let error) = $0 { (response, error) } else { nil } }.first
        }
    }

    static func api(plugins: [any Plugin], clock: TestClock? = nil, transport: (any Transport)? = TestTransport.make()) -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: clock == nil ? 30 : .infinity, retryPolicy: .never, plugins: plugins),
                    transport: transport, responseQueue: .global(), clock: clock)
    }

    /// A redirect, then a 401 before the refresh, then the stream: its head (the promise's and
    /// the plugins') holds the two earlier exchanges and what is known of its own, its first
    /// byte, not yet its end. (The head's metrics were empty.)
    @Test func aStreamsHeadHoldsTheEarlierHopsAndWhatIsKnownOfItsOwn() async throws {
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                if request.hasPrefix("GET /old ") {
                    _ = connection.send("HTTP/1.1 302 Found\r\nLocation: /events\r\nContent-Length: 0\r\n\r\n")
                } else if !request.contains("Bearer t2") {
                    _ = connection.send(RawServer.Connection.response("expired", status: "401 Unauthorized"))
                } else {
                    _ = connection.send("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
                }
            }
        }
        defer { server.stop() }
        let log = EventLog()
        let tokens = EventSourceTests.CountingTokens()
        let api = Self.api(plugins: [log])
        api.delegate = tokens
        let stream = api.stream(route: .get(server.baseURL + "/old"))
        let head = try await stream.response.value
        var body = Data()
        for try await chunk in stream { body += chunk }
        withExtendedLifetime(tokens) {}
        #expect(String(decoding: body, as: UTF8.self) == "hello")
        #expect(log.heads.map(\.statusCode) == [302, 401, 200])
        #expect(log.heads.last?.metrics == head.metrics)
        guard TestTransport.isCurl else {
            #expect(head.metrics.isEmpty)
            return
        }
        #expect(head.metrics.map(\.statusCode) == [302, 401, 200])
        #expect(head.metrics.map { $0.url?.path } == ["/old", "/events", "/events"])
        let own = try #require(head.metrics.last)
        #expect(own.total == nil, "the stream's own exchange has not ended at its head")
        let firstByte = try #require(own.firstByte)
        #expect(firstByte > 0 && (own.connect ?? 0) <= firstByte)
        #expect(own.httpVersion == "HTTP/1.1")
        #expect(head.metrics.dropLast().allSatisfy { $0.total != nil })
    }

    #if os(Linux)
    /// Over HTTPS the head knows when the TLS handshake ended: after the connection, before the
    /// first byte (libcurl, through a TLS relay with the test CA; FoundationNetworking trusts
    /// only the system's certificates, and measures nothing).
    @Test func overHTTPSTheHeadKnowsTheHandshake() async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        }
        defer { server.stop() }
        let certificates = try TestCertificates()
        let relay = try TLSRelay(certificates: certificates, to: server.port)
        defer { relay.stop() }
        let log = EventLog()
        let stream = Self.api(plugins: [log], transport: try CurlTransport(trusting: certificates.authority))
            .stream(route: .get(relay.baseURL + "/events"))
        let head = try await stream.response.value
        for try await _ in stream {}
        let own = try #require(head.metrics.last)
        let connect = try #require(own.connect)
        let handshake = try #require(own.tlsHandshake)
        let firstByte = try #require(own.firstByte)
        #expect(connect > 0 && connect <= handshake && handshake <= firstByte, "\(own)")
        #expect(own.total == nil)
        #expect(await eventually { log.end != nil })
        let end = try #require(log.end)
        #expect(end.response.metrics.last?.tlsHandshake == handshake)
        #expect(end.response.metrics.last?.bytesReceived == 2)
    }
    #endif

    /// How a stream ends, in its test below.
    enum Ending: String, CaseIterable, Sendable {
        case complete, broken, cancelled, idle, tooLong
    }

    /// However a stream ends (its body whole, the connection broken, the reader's cancel, the
    /// idle timeout, the longest duration), plugins hear it once, after its one `didReceive`,
    /// with its whole transfer: the bytes received, its end, and how long it ran. (Nothing was
    /// told: a stream's end reached no plugin.)
    @Test(arguments: Ending.allCases)
    func pluginsHearAStreamsEndWithItsWholeTransfer(ending: Ending) async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            let whole = ending == .complete
            _ = connection.send("HTTP/1.1 200 OK\r\nContent-Length: \(whole ? 9 : 1000)\r\n\r\ndata: a\n\n")
            // Closed at once, cut short, or held until the client hangs up.
            if ending != .complete && ending != .broken { _ = connection.readAvailable(for: 30) }
        }
        defer { server.stop() }
        let clock = TestClock()
        let log = EventLog()
        let options = RequestOptions(streamIdleTimeout: ending == .idle ? 5 : .infinity, streamMaximumDuration: ending == .tooLong ? 7 : .infinity)
        let stream = Self.api(plugins: [log], clock: clock).stream(route: .get(server.baseURL + "/events"), options: options)
        let head = try await stream.response.value
        let reader = stream.makeAsyncIterator()
        #expect(try await reader.next() == Data("data: a\n\n".utf8))
        switch ending {
        case .complete, .broken: break
        case .cancelled: stream.cancel()
        case .idle, .tooLong:
            #expect(await clock.waitForScheduled(1))
            clock.advance(by: ending == .idle ? 5 : 7)
        }
        let last: Result<Data?, any Error>
        do { last = .success(try await reader.next()) } catch { last = .failure(error) }
        let expected: String? = switch ending {
        case .complete: nil
        case .broken: "transportFailed"
        case .cancelled: "cancelled"
        case .idle, .tooLong: "timeout"
        }
        switch last {
        case .success(let chunk): #expect(chunk == nil && expected == nil)
        case .failure(let error): #expect((error as? APIError)?.caseName == expected, "\(error)")
        }
        #expect(await eventually { log.end != nil })
        let end = try #require(log.end)
        #expect(end.error?.caseName == expected)
        if case .timeout(let timeout)? = end.error { #expect(timeout.interval == (ending == .idle ? 5 : 7)) }
        #expect(log.words == ["willSend /events", "didReceive 200", "didEndStream 200 \(expected ?? "complete")"])
        #expect(end.response.request.url == head.request.url)
        #expect(end.response.start == head.start && end.response.duration >= head.duration)
        guard TestTransport.isCurl else {
            #expect(end.response.metrics.isEmpty)
            return
        }
        let whole = try #require(end.response.metrics.last)
        #expect(end.response.metrics.count == 1)
        #expect(whole.statusCode == 200)
        #expect(whole.bytesReceived == 9)
        #expect(whole.firstByte == head.metrics.last?.firstByte)
        let total = try #require(whole.total)
        #expect(total >= (whole.firstByte ?? .infinity))
    }

    /// The logger prints a line when a stream ends: how long it ran, how much came, how.
    @Test func theLoggerSaysWhenAStreamEnds() async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\ndata: a\n\n")
        }
        defer { server.stop() }
        let lines = Recorder<String>()
        let logger = LoggerPlugin(level: .response) { lines.append($0) }
        let stream = Self.api(plugins: [logger]).stream(route: .get(server.baseURL + "/events"))
        var thrown: (any Error)?
        do { for try await _ in stream {} } catch { thrown = error }
        let error = try #require(thrown as? APIError)
        #expect(await eventually { lines.items.count == 3 }, "\(lines.items)")
        let line = lines.items.last ?? ""
        #expect(line.hasPrefix("← end of stream GET \(server.baseURL)/events after "), "\(line)")
        #expect(line.hasSuffix(": \(error)"), "\(line)")
        #expect(line.contains(" ms, 9 B; ") == TestTransport.isCurl, "\(line)")
    }
}
