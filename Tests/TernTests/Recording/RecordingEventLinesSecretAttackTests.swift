import Foundation
import Testing
import Tern
import TernTesting

/// An event stream whose event's data is JSON, the token in it, where the redactor's reading
/// of the body a `\n`-line at a time is not the event stream's. RecordingAndReplaying.md
/// promises: "`Authorization`, … never reach the file, nor do the values of …, named or not,
/// of OAuth's and OpenID's `access_token`, … (… in each line of newline-delimited JSON and
/// each `data:` line of an event stream)". Two events the app reads as JSON holding
/// `access_token`, written in clear:
/// - lines ended by a lone CR, which the event stream format (and Tern's reader, which hands
///   the app each event) takes as line ends: the redactor sees the whole body as one line,
///   which is no JSON, and hides nothing;
/// - one event's JSON written over several `data:` lines (a server pretty-printing), which the
///   stream joins into one JSON value: no line alone is JSON, and nothing is hidden.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingEventLinesSecretAttackTests {
    let baseURL = "https://shop.example"

    func recordedEvents(_ answer: StubAnswer, into file: URL) async throws -> [String] {
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/session", answers: answer))
        let recording = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .record, upstream: stubs))
        var recorded: [String] = []
        for try await event in recording.stream(route: recording.get(endpoint: "/session")).events { recorded.append(event.data) }
        return recorded
    }

    @Test func aTokenInEventsEndedByACarriageReturnIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let token = "tok-\(UUID().uuidString)"
        let body = "data: {\"state\": \"signing in\"}\r\revent: token\rdata: {\"access_token\": \"\(token)\", \"expires_in\": 60}\r\r"
        let events = try await recordedEvents(.streamed(headers: ["Content-Type": "text/event-stream"], [(after: 0, text: body)]), into: file)
        #expect(events.last?.contains(token) == true, "the app did not read the token as an event: \(events)")
        let written = try String(contentsOf: file, encoding: .utf8)
        #expect(!written.contains(token), "the token is in the recording: \(written)")
    }

    @Test func aTokenInAnEventsJSONOverSeveralDataLinesIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let token = "tok-\(UUID().uuidString)"
        let data = "{\n  \"access_token\": \"\(token)\",\n  \"expires_in\": 60\n}"
        let events = try await recordedEvents(.events([(after: 0, ServerSentEvent(type: "token", data: data))]), into: file)
        let issued = try JSONSerialization.jsonObject(with: Data((events.last ?? "").utf8)) as? [String: Any]
        #expect(issued?["access_token"] as? String == token, "the app did not read the token as JSON: \(events)")
        let written = try String(contentsOf: file, encoding: .utf8)
        #expect(!written.contains(token), "the token is in the recording: \(written)")
    }
}
