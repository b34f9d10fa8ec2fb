import Foundation
import Testing
import Tern
import TernTesting

/// An event stream recorded from a real server, then replayed: one event, a pause, then a burst
/// of 12 MiB of events, after which the client leaves the stream (as a reader of a feed does
/// once it has what it wanted). The recorder keeps chunks that came within a twentieth of a
/// second of each other as one record (`_chunks`), so the burst is one record of megabytes, and
/// the exchange `_open`.
///
/// RecordingAndReplaying.md promises that a test replays "offline, exact", and "Streams and
/// Server-Sent Events keep when each chunk came ... Replayed without a clock, a stream comes at
/// once ... A stream the client left while it went on (`_open`) stays open on replay until
/// cancelled"; StreamingResponses.md that "Past `RequestOptions(streamBufferSize:)` bytes (1 MiB)
/// waiting for the reader, `CurlTransport` stops reading from the socket", the overrun error being
/// for "URLSession on Linux [that] cannot pause a task". Recorded through libcurl (the default
/// transport), every event came. Replayed, `HTTPArchive.Entry.answer` hands the burst to the stream as one piece of
/// 12 MiB (a whole body answered is cut into 64 KiB pieces, `Exchange.largestStreamPiece`, but
/// not the pieces of `_chunks`), which `StreamBuffer.offer` finds past its ceiling (4 MiB) while
/// the reader is busy with the event before: the replay ends with `responseTooLarge`, telling the
/// test to "use CurlTransport", after one event of the thousands recorded.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingReplayedBurstAttackTests {
    /// One event of 1 KiB (with its id), repeated to make the burst.
    static func event(_ number: Int) -> String {
        "id: \(number)\ndata: " + String(repeating: "t", count: 1000) + "\n\n"
    }

    static let burstEvents = 12_000

    /// Reads `events` of `api`'s stream until the last event of the burst, the first one slowly
    /// (an app showing it); the events read, and how it ended.
    static func read(_ api: TestAPI, url: String) async -> (events: Int, end: String) {
        var count = 0
        do {
            for try await event in api.stream(route: .get(url)).events {
                count += 1
                if count == 1 { try await Task.sleep(nanoseconds: 20_000_000) }
                if event.lastEventID == "\(burstEvents)" { return (count, "left") }
            }
            return (count, "ended")
        } catch {
            return (count, "\(error)")
        }
    }

    @Test func aBurstRecordedWholeReplaysWhole() async throws {
        let burst = Array((1...Self.burstEvents).map(Self.event).joined().utf8)
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n" + Self.event(0)) else { return }
            connection.pause(300)
            guard connection.send(burst) else { return }
            // The feed goes on, quietly: the client leaves it.
            _ = connection.readAvailable(for: 20)
        }
        defer { server.stop() }
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        // Recorded through the default transport (libcurl), which holds the server back while the
        // reader is busy, as documented; the replay reaches no transport at all.
        let recording = try TestAPI(baseURL: server.baseURL, transport: RecordingTransport(file: file, mode: .record))
        let recorded = await Self.read(recording, url: server.baseURL + "/feed")
        #expect(recorded.events == Self.burstEvents + 1 && recorded.end == "left", "recorded \(recorded)")

        let replaying = try TestAPI(baseURL: server.baseURL, transport: RecordingTransport(file: file, mode: .replay))
        let replayed = await Self.read(replaying, url: server.baseURL + "/feed")
        let pieces = ((try? recordedEntries(in: file))?.first?["_chunks"] as? [[String: Any]])?.compactMap { $0["size"] as? Int } ?? []
        #expect(replayed.events == recorded.events && replayed.end == "left", "replayed \(replayed.events) events, ending \(replayed.end.prefix(300)); recorded pieces \(pieces)")
    }
}
