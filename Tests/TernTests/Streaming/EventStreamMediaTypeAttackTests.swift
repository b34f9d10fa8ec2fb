import Foundation
import Testing
@testable import Tern
import TernTesting

/// An event stream whose `Content-Type` carries a parameter with a quoted value holding a comma
/// (`text/event-stream; profile="a,b"`): lawful (RFC 9110 §5.6.6, a parameter's value may be a
/// quoted-string, and a comma may stand inside one), and read as an event stream by browsers,
/// whose "extract a MIME type" splits the field's values outside quotes only.
///
/// StreamingResponses.md: "an answer that is not `text/event-stream` (a server or proxy that
/// ignored the request to stream, and answered JSON) fails with ``APIError/parsingFailed(_:)``"
/// and "An event stream is known whatever its case and parameters"
/// (`EventSourceTests.anEventStreamIsKnownWhateverItsCaseAndParameters`). Here the answer *is*
/// `text/event-stream`, yet the events view and an event source both fail with
/// `parsingFailed(NotAnEventStream)` before the first event, and the source never reconnects:
/// `eventStreamHead()` splits the field on every comma, quotes or not, and takes the last piece
/// (`b"`) for the media type.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct EventStreamMediaTypeAttackTests {
    static let contentTypes = [#"text/event-stream; profile="a,b""#, #"text/event-stream;charset=utf-8;note="x, y""#]

    static func server(contentType: String) throws -> RawServer {
        try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send("HTTP/1.1 200 OK\r\nContent-Type: \(contentType)\r\nContent-Length: 15\r\nConnection: close\r\n\r\nid: 1\ndata: a\n\n")
        }
    }

    func api() -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
    }

    @Test(arguments: contentTypes)
    func aStreamsEventsAreReadWhateverItsParametersQuote(contentType: String) async throws {
        let server = try Self.server(contentType: contentType)
        defer { server.stop() }
        var iterator = api().stream(route: .get(server.baseURL + "/changes")).events.makeAsyncIterator()
        do {
            #expect(try await iterator.next()?.data == "a")
        } catch {
            Issue.record("an event stream refused: \(error)")
        }
    }

    @Test(arguments: contentTypes)
    func anEventSourceReadsAStreamWhateverItsParametersQuote(contentType: String) async throws {
        let server = try Self.server(contentType: contentType)
        defer { server.stop() }
        var iterator = api().events(route: .get(server.baseURL + "/changes"), reconnection: EventReconnection(maximumFailures: 1))
            .makeAsyncIterator()
        do {
            #expect(try await iterator.next() == ServerSentEvent(data: "a", lastEventID: "1"))
        } catch {
            Issue.record("an event stream refused: \(error)")
        }
    }
}
