import Foundation
import Testing
import Tern
import TernTesting

/// A `HEAD` asks how large a resource is without its body: recorded, its answer replays the
/// `Content-Length` the server stated, with no body, as a transport hands it over.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordedHeadAttackTests {
    /// A `HEAD` recorded replays the length its answer stated. Before, replay stated the length
    /// of the (empty) body recorded, `0`, as for any stub.
    @Test func aRecordedHeadReplaysTheLengthItWasAnsweredWith() async throws {
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                _ = connection.send("HTTP/1.1 200 OK\r\nContent-Type: application/pdf\r\nContent-Length: 123456\r\n\r\n")
            }
        }
        defer { server.stop() }
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let configuration = APIConfiguration(retryPolicy: .never)
        let recording = AbstractAPI(configuration: configuration,
                                    transport: try RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()), responseQueue: .global())
        let recorded: Response = try await recording.request(route: .head(server.baseURL + "/report.pdf")).value
        server.stop()
        #expect(recorded.headers["Content-Length"] == "123456")

        let replaying = AbstractAPI(configuration: configuration,
                                    transport: try RecordingTransport(file: file, mode: .replay), responseQueue: .global())
        let replayed: Response = try await replaying.request(route: .head(server.baseURL + "/report.pdf")).value
        #expect(replayed.statusCode == 200 && replayed.body.isEmpty)
        #expect(replayed.headers["Content-Length"] == "123456")
    }

    /// A `HEAD` whose entry was given a body (a file edited by hand, a server that sent one)
    /// replays none: no transport hands a `HEAD`'s answer a body, and a `GET` of the same URL
    /// gets its own. Before, the body was the `HEAD`'s answer.
    @Test func aRecordedHeadGivenABodyReplaysNone() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let entries = [RecordingTransportTests.entry("HEAD", "https://shop.example/p", body: "stray"),
                       RecordingTransportTests.entry("GET", "https://shop.example/p", body: "whole")]
        try Data(RecordingTransportTests.archive(entries: entries).utf8).write(to: file.creatingDirectory())
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never),
                              transport: try RecordingTransport(file: file, mode: .replay), responseQueue: .global())
        let head: Response = try await api.request(route: .head("https://shop.example/p")).value
        #expect(head.statusCode == 200 && head.body.isEmpty, "\(String(decoding: head.body, as: UTF8.self))")
        let get: Response = try await api.request(route: .get("https://shop.example/p")).value
        #expect(String(decoding: get.body, as: UTF8.self) == "whole")
    }
}
