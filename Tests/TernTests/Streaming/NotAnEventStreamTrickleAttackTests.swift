import Foundation
import Testing
import Tern
import TernTesting

/// An event source whose server (a proxy's page, a hostile host) answers `text/html` instead of
/// `text/event-stream`, sends a few bytes of its page, then one byte a second.
///
/// StreamingResponses.md promises: "An answer that is no event stream ends it. Its
/// `Content-Type` not `text/event-stream`, as an error page or JSON would be, it fails with
/// ``APIError/parsingFailed(_:)`` ... whose body snippet holds the answer's first bytes"; and of
/// the timeouts, that the idle timeout ends a stream "when for that long no byte comes". The type
/// is known at the head, but `ResponseStream.eventStreamHead()` reads the body until it has the
/// 512 bytes of a snippet (`while body.count < APIError.snippetLength`), however slowly they
/// come, before it fails: a byte a second keeps the failure back for eight and a half minutes, a
/// byte every 59 seconds (under the idle timeout) for more than eight hours, with the source's
/// loop waiting on it and the connection held. Here the server trickles for 30 seconds and sees
/// the client stay to the end.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct NotAnEventStreamTrickleAttackTests {
    @Test func anAnswerThatIsNoEventStreamFailsWithoutWaitingForItsSnippet() async throws {
        let trickled = Locked(0)
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "10\r\n<html><body>Plea\r\n") else { return }
            for _ in 0..<30 {
                connection.pause(1000)
                guard connection.send("1\r\ns\r\n") else { return }
                trickled.withLock { $0 += 1 }
            }
            _ = connection.send("0\r\n\r\n")
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20), transport: TestTransport.make(), responseQueue: .global())
        var outcome = "no event and no error"
        do {
            for try await event in api.events(route: .get(server.baseURL + "/changes"), reconnection: EventReconnection(maximumFailures: 1)) {
                outcome = "an event: \(event.data)"
                break
            }
        } catch let error as APIError {
            outcome = error.caseName
        }
        let sent = trickled.withLock { $0 }
        #expect(outcome == "parsingFailed", "\(outcome)")
        // Failed at its head, the source hangs up: the server's next byte or two find no one.
        #expect(sent < 10, "the client read \(sent) bytes a second apart before it failed")
    }
}
