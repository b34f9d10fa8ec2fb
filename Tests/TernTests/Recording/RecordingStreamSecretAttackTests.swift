import Foundation
import Testing
import Tern
import TernTesting

/// Secrets in answers that are JSON a line at a time, not one JSON value: Server-Sent Events
/// whose `data:` lines are JSON, and newline-delimited JSON. A member named secret is hidden in
/// each line, as in a JSON body, and the answer replays line for line.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingStreamSecretAttackTests {
    let baseURL = "https://shop.example"
    let options = RecordingOptions(secrets: ["access_token"])

    /// An event stream that issues a token in an event's JSON: hidden in the file, each event
    /// replayed, the token's as `[redacted]`.
    @Test func aSecretInAnEventsJSONIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let token = "tok-\(UUID().uuidString)"
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/session", answers: .events([
            (after: 0, ServerSentEvent(data: #"{"state": "signing in"}"#)),
            (after: 0, ServerSentEvent(type: "token", data: #"{"access_token": "\#(token)", "expires_in": 60}"#)),
        ])))
        let recording = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .record, upstream: stubs, options: options))
        var recorded: [String] = []
        for try await event in recording.stream(route: recording.get(endpoint: "/session")).events { recorded.append(event.data) }
        #expect(recorded.count == 2)
        let written = try String(contentsOf: file, encoding: .utf8)
        #expect(!written.contains(token), "the token is in the recording: \(written)")

        let replaying = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .replay, options: options))
        var replayed: [String] = []
        for try await event in replaying.stream(route: replaying.get(endpoint: "/session")).events { replayed.append(event.data) }
        #expect(replayed.first == recorded.first)
        let issued = try JSONSerialization.jsonObject(with: Data((replayed.last ?? "").utf8)) as? [String: Any]
        #expect(issued?["access_token"] as? String == "[redacted]" && issued?["expires_in"] as? Int == 60, "\(replayed)")
    }

    /// Newline-delimited JSON, a token in one of its lines: hidden there, the other lines kept
    /// as they came.
    @Test func aSecretInALineOfNDJSONIsHidden() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let token = "tok-\(UUID().uuidString)"
        let lines = [#"{"n": 1}"#, #"{"n": 2, "auth": {"access_token": "\#(token)"}}"#, #"{"n": 3}"#]
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/export", answers: .text(lines.joined(separator: "\n") + "\n", headers: ["Content-Type": "application/x-ndjson"])))
        let recording = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .record, upstream: stubs, options: options))
        let _: Data = try await recording.request(route: recording.get(endpoint: "/export")).value
        let written = try String(contentsOf: file, encoding: .utf8)
        #expect(!written.contains(token), "the token is in the recording: \(written)")

        let replaying = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .replay, options: options))
        let replayed: Data = try await replaying.request(route: replaying.get(endpoint: "/export")).value
        let replayedLines = String(decoding: replayed, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(replayedLines.count == 3 && replayedLines.first == lines[0] && replayedLines.last == lines[2], "\(replayedLines)")
    }
}
