import Foundation
import Testing
@testable import Tern
import TernTesting

/// `EventReconnection(maximumFailures:)` counts failed attempts *in a row*; an attempt that
/// connected and was answered with an event stream is no failed one, and ends the row.
///
/// StreamingResponses.md: "`maximumFailures` failed attempts in a row end it with that error",
/// and "`maximumFailures: 3` is at most three failed requests in a row"; EventReconnection's own
/// documentation: "How many attempts may fail in a row before the source ends with the last
/// one's error". Here two requests fail (the server hangs up unanswered), the third is answered
/// `200 text/event-stream` and stays open 1.5 s (a quiet feed: a comment, then the body's end,
/// which the docs call no failure: "A connection that brought an event, or stayed open longer
/// without one ... starts the wait afresh"), the fourth fails, and the fifth is a 204, which
/// ends the source without error. With `maximumFailures: 3` the source ends on the fourth
/// request with its `transportFailed`, as though the three failures had come in a row:
/// `EventSource.Iterator.next()` sets `failures = 0` only when an event arrives, never when a
/// connection opened and ended well.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct EventSourceFailureStreakAttackTests {
    @Test func anAnsweredQuietConnectionEndsTheRowOfFailures() async throws {
        let requests = Locked(0)
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            switch requests.withLock({ $0 += 1; return $0 }) {
            case 3:
                _ = connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                                    + StreamTests.chunk(": quiet\n"))
                connection.pause(1500)
                _ = connection.send("0\r\n\r\n")
            case 5...:
                _ = connection.send("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
            default:
                return   // hung up unanswered: a failed attempt
            }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        let reconnection = EventReconnection(delay: 0.5, maximumDelay: 1, maximumFailures: 3)
        do {
            for try await event in api.events(route: .get(server.baseURL + "/changes"), reconnection: reconnection) {
                Issue.record("an event: \(event)")
            }
        } catch {
            Issue.record("the source ended after \(requests.withLock { $0 }) requests with \(error)")
        }
        #expect(requests.withLock { $0 } == 5)
    }
}
