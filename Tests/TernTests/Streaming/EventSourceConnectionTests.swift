import Foundation
import Testing
@testable import Tern
@testable import TernCore
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What an event source's user sees of each connection: its request and head through plugins,
/// and the options' stream settings on each, against a raw socket server, on a test clock.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct EventSourceConnectionTests {
    /// Records each request's `Last-Event-ID` before it goes, and how each attempt ended.
    final class ConnectionLog: Plugin {
        let sent = Locked([String]())
        let received = Locked([String]())

        func observe(_ event: PluginEvent, api: APIContext) {
            switch event {
            case .willSend(let request): sent.withLock { $0.append(request.value(forHTTPHeaderField: "Last-Event-ID") ?? "") }
            case .didReceive(let result, _): didReceive(result)
            default: break
            }
        }

        func didReceive(_ result: Result<Response, APIError>) {
            let line = switch result {
            case .success(let response): "\(response.statusCode) \(response.head.headers["X-Feed"] ?? "")"
            case .failure(.transportFailed): "failed"
            case .failure(let error): "\(error)"
            }
            received.withLock { $0.append(line) }
        }
    }

    static func api(clock: TestClock) -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: .infinity, retryPolicy: .never), transport: TestTransport.make(),
                    responseQueue: .global(), clock: clock)
    }

    /// The options' plugins hear each connection: its request (with the `Last-Event-ID` it
    /// resumes from) before it goes, and its head, or its error, when it comes.
    @Test func pluginsHearEachConnection() async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            switch connection.index {
            case 0: _ = connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Feed: one\r\nContent-Length: 15\r\n"
                                         + "Connection: close\r\n\r\nid: 1\ndata: a\n\n")
            case 1: return   // closed without an answer
            default: _ = connection.send("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
            }
        }
        defer { server.stop() }
        let clock = TestClock()
        let log = ConnectionLog()
        let source = Self.api(clock: clock).events(route: .get(server.baseURL + "/changes"),
                                                   options: RequestOptions(plugins: [log], streamIdleTimeout: .infinity))
        let reading = Task.onTestThreads {
            var events: [String] = []
            for try await event in source { events.append(event.data) }
            return events
        }
        defer { reading.cancel() }
        for count in 1...2 {
            #expect(await EventSourceBackoffTests.letWaitPass(count, on: clock) != nil)
        }
        #expect(try await outcome(of: reading).get() == ["a"])
        #expect(log.sent.withLock { $0 } == ["", "1", "1"])
        #expect(log.received.withLock { $0 } == ["200 one", "failed", "204 "])
    }

    /// The options' idle timeout holds for each connection, and one that falls silent is made
    /// again; the source had a loose argument of its own for it.
    @Test func eachConnectionEndsAtTheOptionsIdleTimeout() async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            if connection.index == 0 {
                _ = connection.send(EventSourceTests.head + StreamTests.chunk("data: a\n\n"))
                _ = connection.readAvailable(for: 30)   // silent until the client hangs up
            } else {
                _ = connection.send("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
            }
        }
        defer { server.stop() }
        let clock = TestClock()
        let source = Self.api(clock: clock).events(route: .get(server.baseURL + "/changes"), options: RequestOptions(streamIdleTimeout: 7))
        let seen = Recorder<String>()
        let reading = Task.onTestThreads {
            for try await event in source { seen.append(event.data) }
            return seen.items
        }
        defer { reading.cancel() }
        #expect(await clock.waitForScheduled(1))
        #expect(clock.scheduledDelays == [7])   // the idle timer, and nothing else yet
        // The event read before the clock moves: it may come a little after the head, and a
        // timeout before it would end the connection without it (seen under load).
        #expect(await eventually { seen.items == ["a"] })
        clock.advance(by: 7)
        // The timeout is a failed attempt: the source waits (3 s, less up to half) and comes back.
        #expect(await EventSourceBackoffTests.letWaitPass(2, on: clock) != nil)
        #expect(try await outcome(of: reading).get() == ["a"])
        #expect(server.connections == 2)
    }

    /// Each reconnection tells plugins its wait and its number since the last event, with the
    /// request of the connection that ended: after an event and the body's end (1), after a
    /// connection closed without an answer (2, the wait doubled). (Plugins heard nothing of it.)
    @Test func eachReconnectionTellsPluginsItsWaitAndNumber() async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            switch connection.index {
            case 0: _ = connection.send(EventSourceBackoffTests.answer("id: 1\ndata: a\n\n"))
            case 1: return   // closed without an answer
            default: _ = connection.send("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
            }
        }
        defer { server.stop() }
        let clock = TestClock()
        let retries = Locked([String]())
        let log = StreamMetricsTests.EventLog()
        let source = Self.api(clock: clock).events(route: .get(server.baseURL + "/changes"),
                                                   options: RequestOptions(plugins: [log], streamIdleTimeout: .infinity))
        let reading = Task.onTestThreads { () async throws -> Int in
            var count = 0
            for try await _ in source { count += 1 }
            return count
        }
        defer { reading.cancel() }
        var waits: [TimeInterval] = []
        for count in 1...2 {
            guard let wait = await EventSourceBackoffTests.letWaitPass(count, on: clock) else { Issue.record("no wait \(count)"); return }
            waits.append(wait)
        }
        #expect(try await outcome(of: reading).get() == 1)
        for event in log.events.withLock({ $0 }) {
            guard case .didRetry(let request, let retry, let delay) = event else { continue }
            retries.withLock { $0.append("\(retry) \(delay) \(request.value(forHTTPHeaderField: "Last-Event-ID") ?? "-")") }
        }
        #expect(retries.withLock { $0 } == ["1 \(waits[0]) -", "2 \(waits[1]) 1"])
        #expect(waits[0] == 3 && waits[1] >= 3 && waits[1] <= 6)
        #expect(log.words.filter { !$0.hasPrefix("didEndStream") }
                == ["willSend /changes", "didReceive 200", "didRetry 1", "willSend /changes", "didReceive transportFailed", "didFail transportFailed",
                    "didRetry 2",
                    "willSend /changes", "didReceive 204"])
    }
}
