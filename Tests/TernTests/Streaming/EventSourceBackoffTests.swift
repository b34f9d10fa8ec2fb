import Foundation
import Testing
@testable import Tern
@testable import TernCore
import TernTesting

/// How long an event source waits between connections that end without an event, against a raw
/// socket server, on a test clock: each wait is read from the clock, none is timed.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct EventSourceBackoffTests {
    /// A whole answer: `body` as an event stream, then the connection closed.
    static func answer(_ body: String) -> String {
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
    }

    /// An API on `clock` whose only timers are the source's waits: no request timeout, and
    /// the source's idle timeout is infinite.
    static func source(_ server: RawServer, clock: TestClock, parameters: (any RequestParameters)? = nil) -> ResponseSequence<ServerSentEvent> {
        let api = AbstractAPI(configuration: APIConfiguration(timeout: .infinity, retryPolicy: .never), transport: TestTransport.make(),
                              responseQueue: .global(), clock: clock)
        return api.events(route: .get(server.baseURL + "/changes"), parameters: parameters,
                          options: RequestOptions(streamIdleTimeout: .infinity), reconnection: EventReconnection(delay: 1, maximumDelay: 8))
    }

    /// Waits until the source has asked the clock for its `count`th wait, and lets it pass.
    static func letWaitPass(_ count: Int, on clock: TestClock) async -> TimeInterval? {
        guard await eventually({ clock.scheduledDelays.count >= count }), clock.scheduledDelays.count == count else { return nil }
        let wait = clock.scheduledDelays[count - 1]
        clock.advance(by: wait)
        return wait
    }

    /// A server that answers and closes at once, with no event: six connections in a row, each
    /// wait doubling (less up to half at random) to the longest, 8 s. The waits were 1 s each:
    /// such a server was asked again every second, or twice a second after a `retry: 0`.
    @Test func connectionsEndingAtOnceWithoutAnEventBackOff() async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send(Self.answer(": nothing to say\nretry: 1000\n\n"))
        }
        defer { server.stop() }
        let clock = TestClock()
        let source = Self.source(server, clock: clock)
        let reading = Task.onTestThreads { for try await _ in source {} }
        defer { reading.cancel() }
        var waits: [TimeInterval] = []
        for count in 1...5 {
            guard let wait = await Self.letWaitPass(count, on: clock) else { Issue.record("no wait \(count)"); return }
            waits.append(wait)
            #expect(await eventually { server.connections == count + 1 })
        }
        for (index, wait) in waits.enumerated() {
            let ceiling = min(8, pow(2, Double(index + 1)))
            #expect(wait >= ceiling / 2 && wait <= ceiling, "wait \(index + 1): \(wait) s, not in \(ceiling / 2)...\(ceiling)")
        }
        #expect(server.connections == 6)
    }

    /// A connection that stays open (30 s on the clock) without an event, or one that brings an
    /// event, starts the wait afresh; quiet ones that end at once back off from there. The
    /// `Last-Event-ID` of the parameters goes out until an event sets another, which then goes
    /// out after a connection that brought none (each connection's parser started from no ID,
    /// so the ID was lost after one).
    @Test func aQuietFeedOrAnEventStartsTheWaitAfresh() async throws {
        let release = DispatchSemaphore(value: 0)
        let held = Locked(false)
        let lastEventIDs = Locked([String]())
        let server = try RawServer { connection in
            guard let request = connection.readRequest() else { return }
            lastEventIDs.withLock { $0.append(EventSourceTests.lastEventID(in: request)) }
            switch connection.index {
            case 1:   // a quiet feed: open until the test has moved the clock, then closed
                _ = connection.send(EventSourceTests.head + StreamTests.chunk(": still here\n"))
                held.withLock { $0 = true }
                release.wait()
                _ = connection.send("0\r\n\r\n")
            case 4: _ = connection.send(Self.answer("id: 7\ndata: x\n\n"))
            case 6: _ = connection.send("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
            default: _ = connection.send(Self.answer(": nothing\n\n"))
            }
        }
        defer {
            release.signal()   // a test that failed before lets the server's thread go
            server.stop()
        }
        let clock = TestClock()
        let source = Self.source(server, clock: clock, parameters: URLParameters([:], headers: ["Last-Event-ID": "42"]))
        let reading = Task.onTestThreads {
            var events: [String] = []
            for try await event in source { events.append(event.data) }
            return events
        }
        defer { reading.cancel() }
        var waits: [TimeInterval] = []
        for count in 1...6 {
            if count == 2 {
                #expect(await eventually { held.withLock { $0 } })
                clock.advance(by: 30)
                release.signal()
            }
            guard let wait = await Self.letWaitPass(count, on: clock) else { Issue.record("no wait \(count)"); return }
            waits.append(wait)
        }
        #expect(try await outcome(of: reading).get() == ["x"])
        #expect(waits.count == 6)
        guard waits.count == 6 else { return }
        #expect((1...2).contains(waits[0]))   // ended at once: a failed attempt
        #expect(waits[1] == 1)                // open 30 s: afresh
        #expect((1...2).contains(waits[2]))
        #expect((2...4).contains(waits[3]))
        #expect(waits[4] == 1)                // brought an event: afresh
        #expect((1...2).contains(waits[5]))
        #expect(lastEventIDs.withLock { $0 } == ["42", "42", "42", "42", "42", "7", "7"])
    }
}
