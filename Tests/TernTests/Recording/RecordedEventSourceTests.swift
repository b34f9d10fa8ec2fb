import Foundation
import Testing
import Tern
@testable import TernTesting

/// An event source's connections, recorded and replayed: each reconnect says the last event it
/// heard (`Last-Event-ID`), and only the connection recorded after that event answers it.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordedEventSourceTests {
    /// Records a feed whose first connection ends after two events and whose second the client
    /// leaves after two more, open.
    func recordFeed(into file: URL) async throws {
        let stubs = StubTransport(clock: TestClock())
        stubs.add(Stub(.get, "/feed", where: { $0.headers["Last-Event-ID"] == nil }, answers: .events([
            (after: 0, ServerSentEvent(data: "a", lastEventID: "1")), (after: 0, ServerSentEvent(data: "b", lastEventID: "2")),
        ])))
        stubs.add(Stub(.get, "/feed", headers: ["Last-Event-ID": "2"], answers: .events([
            (after: 0, ServerSentEvent(data: "c", lastEventID: "3")), (after: 0, ServerSentEvent(data: "d", lastEventID: "4")),
            (after: 100, ServerSentEvent(data: "never", lastEventID: "5")),   // the stub's clock never gets there
        ])))
        let recording = try TestAPI(baseURL: "https://feed.example", transport: RecordingTransport(file: file, mode: .record, upstream: stubs))
        var heard: [String] = []
        for try await event in recording.events(route: recording.get(endpoint: "/feed"), reconnection: EventReconnection(delay: 0.5)) {
            heard.append(event.lastEventID)
            if heard.count == 4 { break }
        }
        #expect(heard == ["1", "2", "3", "4"])
        #expect(await eventually { (try? recordedEntries(in: file).count) == 2 })
    }

    /// Replayed as far as it was recorded, the feed gives each event once, each reconnect
    /// answered by the connection recorded after the same event.
    @Test func aFeedReplaysItsConnectionsInTheOrderOfTheirEvents() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try await recordFeed(into: file)

        let replaying = try TestAPI(baseURL: "https://feed.example", transport: RecordingTransport(file: file, mode: .replay))
        var heard: [String] = []
        for try await event in replaying.events(route: replaying.get(endpoint: "/feed"), reconnection: EventReconnection(delay: 0.5)) {
            heard.append(event.data)
            if heard.count == 4 { break }
        }
        #expect(heard == ["a", "b", "c", "d"])
    }

    /// Read past its recording, the feed fails, its reconnect after event 4 unmatched, naming
    /// the `Last-Event-ID` the recording lacks. It once heard the last recorded connection's
    /// events again after each idle timeout ("c", "d", "c", "d"…): never a silently wrong answer.
    @Test func aFeedReadPastItsRecordingFailsRatherThanRepeatItsEvents() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try await recordFeed(into: file)

        let replaying = try TestAPI(baseURL: "https://feed.example", transport: RecordingTransport(file: file, mode: .replay))
        // The last connection was recorded open: it stays so, until the stream's idle timeout.
        let events = replaying.events(route: replaying.get(endpoint: "/feed"), options: RequestOptions(streamIdleTimeout: 1),
                                      reconnection: EventReconnection(delay: 0.5))
        var heard: [String] = []
        let failure = await #expect(throws: APIError.self) {
            for try await event in events {
                heard.append(event.data)
                if heard.count == 8 { break }
            }
        }
        #expect(heard == ["a", "b", "c", "d"])
        guard case .transportFailed(let cause)? = failure, let unmatched = cause.underlying as? UnmatchedRequest else {
            Issue.record("expected a reconnect the recording cannot answer, got \(String(describing: failure))")
            return
        }
        #expect(unmatched.request.headers["Last-Event-ID"] == "4")
        #expect(unmatched.description.contains("header Last-Event-ID is 4, not 2"), "\(unmatched)")
    }
}
