import Foundation
import Testing
import Tern
import TernTesting

/// An event whose `data` line is bytes that are not UTF-8 (a server's Latin-1 text, or a hostile
/// one's), read with a limit on an event's data. StreamingResponses.md promises "no event's data
/// longer than 16 MiB (``ResponseStream/events(maximumLineLength:maximumEventLength:)``), so that
/// a server that never ends an event cannot fill memory", and "an event past its cap ends the
/// stream with ``APIError/responseTooLarge(_:)``". `ServerSentEventParser` checks the line's
/// bytes against the cap, then decodes them, each byte that is not UTF-8 becoming U+FFFD, three
/// bytes: a line of 3,000 such bytes under a cap of 4,096 is delivered as an event whose data is
/// 9,000 bytes, more than twice the cap, and the stream goes on.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct EventLengthUndecodedAttackTests {
    @Test func anEventsDataIsNeverLongerThanItsCap() async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            let body = Array("data: ".utf8) + [UInt8](repeating: 0xE9, count: 3000) + Array("\n\n".utf8)
            _ = connection.send(Array("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        var lengths: [Int] = []
        var ending = "end"
        do {
            for try await event in api.stream(route: .get(server.baseURL + "/feed")).events(maximumEventLength: 4096) {
                lengths.append(event.data.utf8.count)
            }
        } catch let error as APIError {
            ending = error.caseName
        }
        #expect(lengths.allSatisfy { $0 <= 4096 }, "events of \(lengths) bytes under a cap of 4096, then \(ending)")
    }
}
