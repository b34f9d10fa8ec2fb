import Foundation
import Testing
@testable import Tern
import TernTesting

/// A stream that a view ends itself: a line or an event past its cap (`responseTooLarge`), an
/// NDJSON line that does not decode (`parsingFailed`), an answer that is no event stream
/// (`parsingFailed` carrying `NotAnEventStream`). The reader gets that error; plugins must hear
/// it too.
///
/// StreamingResponses.md, "What a stream reports": "At its end, whether the body came whole, the
/// connection broke, the reader left, or the idle timeout or the longest duration ended it,
/// plugins get `didEndStream` once: ... and the ``APIError`` that ended it"; and "A line or an
/// event past its cap ends the stream with ``APIError/responseTooLarge(_:)``". Here plugins
/// (and so `LoggerPlugin`'s "← end of stream" line) hear `cancelled`, as if the app had left:
/// each view calls `stream.cancel()` before it throws (`ServerSentEvents.Iterator.next()`,
/// `ResponseLines.Iterator.next()`, `DecodedLines`, `eventStreamHead()`), and `StreamBuffer`
/// keeps that first end, `.cancelled`, for the report. A log then blames the app for a server
/// that sent a 2 MiB line or a page of JSON. Both transports.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct StreamEndCauseAttackTests {
    enum View: String, CaseIterable, Sendable {
        case eventTooLong, lineTooLong, undecodableLine, notAnEventStream
    }

    struct Reading: Decodable, Sendable { let n: Int }

    @Test(arguments: View.allCases)
    func pluginsHearTheErrorThatEndedTheStream(view: View) async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            let (type, body) = switch view {
            case .eventTooLong: ("text/event-stream", "data: " + String(repeating: "y", count: 200) + "\n\n")
            case .lineTooLong: ("text/plain", String(repeating: "y", count: 200) + "\n")
            case .undecodableLine: ("application/x-ndjson", "{\"n\":1}\n{\"n\":\"two\"}\n")
            case .notAnEventStream: ("application/json", "{\"error\":\"no such feed\"}")
            }
            _ = connection.send("HTTP/1.1 200 OK\r\nContent-Type: \(type)\r\nContent-Length: \(body.utf8.count + 1000)\r\n\r\n\(body)")
            _ = connection.readAvailable(for: 20)   // the rest never comes: only the view ends it
        }
        defer { server.stop() }
        let log = StreamMetricsTests.EventLog()
        let stream = StreamMetricsTests.api(plugins: [log]).stream(route: .get(server.baseURL + "/feed"))
        var thrown: APIError?
        do {
            switch view {
            case .eventTooLong: for try await _ in stream.events(maximumLineLength: 1000, maximumEventLength: 100) {}
            case .lineTooLong: for try await _ in stream.lines(maximumLength: 100) {}
            case .undecodableLine: for try await _ in stream.values(of: Reading.self) {}
            case .notAnEventStream: for try await _ in stream.events {}
            }
        } catch let error as APIError {
            thrown = error
        }
        let expected = view == .eventTooLong || view == .lineTooLong ? "responseTooLarge" : "parsingFailed"
        #expect(thrown?.caseName == expected)
        #expect(await eventually { log.end != nil })
        #expect(log.end?.error?.caseName == expected, "plugins heard \(log.words)")
    }
}
