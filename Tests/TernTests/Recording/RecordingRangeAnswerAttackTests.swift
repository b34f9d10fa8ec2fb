import Foundation
import Testing
import Tern
import TernTesting

/// A `206` recorded for a request that asked for a part of a file (`Range: bytes=0-9`, a player
/// reading a file's header) and a `200` recorded for the whole file, one URL, both in flight at
/// once: the whole one sent first, the server taking longer over it, so that the part is
/// recorded first. Replayed by the same code, the whole file's request, sent first, is answered
/// by the first exchange recorded for its method and URL: the `206`, ten bytes, which the
/// pipeline hands to the app as the whole body with no error (nothing above the transport
/// checks a `206` against a `Range` the request did not send).
///
/// RecordingAndReplaying.md: a recording replays "offline, exact", and "A recorded `304` or
/// `412` answers only a request with the same conditions": a `206` is the same kind of answer,
/// an answer to the request's `Range`, and is no answer to a request without one. The brief's
/// promise: replay never gives a request another request's answer; never a silently wrong
/// answer. Cause, as read: `RecordedExchange.mismatch` (Sources/TernTesting/Recording/
/// RecordedExchange.swift) compares the condition fields for a 304/412 but never `Range` (nor
/// `If-Range`) for a 206 or 416.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingRangeAnswerAttackTests {
    struct RangeHeader: RequestParameters {
        let value: String
        var headers: HTTPHeaders { ["Range": value] }
        func encode(into draft: inout RequestDraft) throws {}
    }

    static let body = Data((0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) })

    /// The whole file's request, then, a moment later, the first ten bytes': both bodies.
    func session(_ api: TestAPI) async throws -> (whole: Data, part: Data) {
        let whole: Promise<Data> = api.request(route: api.get(endpoint: "/clip.bin"))
        try await Task.sleep(nanoseconds: 150_000_000)
        let part: Promise<Data> = api.request(route: api.get(endpoint: "/clip.bin"), parameters: RangeHeader(value: "bytes=0-9"))
        return (try await whole.value, try await part.value)
    }

    @Test func aPartRecordedForARangeDoesNotAnswerTheWholeFilesRequest() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let server = try LoopbackServer { request in
            let response = ServerResponse.file(Self.body, for: request, etag: #""v1""#)
            // Long enough for the part to come first on a loaded machine (0.8 s was not, once,
            // over URLSession): the order recorded is this test's premise, not what it checks.
            return request.headers["Range"] == nil ? response.with(.delayed(3)) : response
        }
        let baseURL = server.baseURL
        let recording = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()))
        let recorded = try await session(recording)
        server.stop()
        let (recordedWhole, recordedPart) = (recorded.whole == Self.body, recorded.part == Self.body.prefix(10))
        #expect(recordedWhole && recordedPart, "recorded \(recorded.whole.count) and \(recorded.part.count) bytes")
        let statuses = try recordedEntries(in: file).compactMap { ($0["response"] as? [String: Any])?["status"] as? Int }
        #expect(statuses == [206, 200], "the part came back first")

        let replaying = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .replay))
        do {
            let bodies = try await session(replaying)
            let (wholeIsTheFile, partIsItsBytes) = (bodies.whole == Self.body, bodies.part == Self.body.prefix(10))
            #expect(wholeIsTheFile, "the whole file's request was answered \(bodies.whole.count) bytes, recorded \(Self.body.count)")
            #expect(partIsItsBytes, "the part's request was answered \(bodies.part.count) bytes")
        } catch {
            // A typed refusal would keep the promise too; a silently wrong body does not.
            #expect(error is APIError, "\(error)")
        }
    }
}
