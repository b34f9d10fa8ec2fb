import Foundation
import Testing
@testable import Tern
@testable import TernCore
import TernTesting

/// A quiet feed (a comment, then nothing) that a proxy cuts after it has been open 30 s on the
/// clock, four times over: the chunked body is never ended, the connection just closes, as a
/// proxy that drops idle connections does.
///
/// StreamingResponses.md: "A connection that brought an event, or stayed open longer without one
/// (a quiet feed the server or a proxy closes now and then), starts the wait afresh", and
/// EventReconnection: "One that brought an event, or stayed open longer (a quiet feed the server
/// closes now and then), starts the wait afresh." So each wait should be the source's delay,
/// 1 s. Instead the waits double as for a server that is down (1-2 s, 2-4 s, 4-8 s, up to the
/// longest delay): `EventSource.Iterator.next()` counts every connection that ends with an error
/// as fruitless, however long it stayed open (and whether it brought events), and only a body
/// that ends cleanly after a second is taken as a quiet feed. A feed behind such a proxy misses
/// up to `maximumDelay` (a minute by default) of events at each cut. The same holds for a quiet
/// feed ended by the stream idle timeout. Both transports.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct QuietFeedDropBackoffAttackTests {
    @Test func aQuietFeedCutAfterAWhileStartsTheWaitAfresh() async throws {
        let release = DispatchSemaphore(value: 0)
        let held = Locked(-1)
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            guard connection.index < 4 else {
                _ = connection.send("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
                return
            }
            _ = connection.send(EventSourceTests.head + StreamTests.chunk(": still here\n"))
            held.withLock { $0 = connection.index }
            release.wait()
            // Closed without the last chunk: cut, as a proxy cuts an idle connection.
        }
        defer {
            for _ in 0..<4 { release.signal() }   // a test that failed before lets the server's threads go
            server.stop()
        }
        let clock = TestClock()
        let source = EventSourceBackoffTests.source(server, clock: clock)
        let reading = Task.onTestThreads { for try await _ in source {} }
        defer { reading.cancel() }
        var waits: [TimeInterval] = []
        for count in 1...4 {
            #expect(await eventually { held.withLock { $0 } == count - 1 })
            clock.advance(by: 30)   // open 30 s without an event: a quiet feed, not a failing server
            release.signal()
            guard let wait = await EventSourceBackoffTests.letWaitPass(count, on: clock) else { Issue.record("no wait \(count)"); return }
            waits.append(wait)
        }
        #expect(waits == [1, 1, 1, 1], "waits after quiet feeds cut after 30 s: \(waits)")
    }
}
