import Foundation
import Testing
import Tern
import TernTesting

/// A response whose `Content-Length` (50 000 bytes) is over the API's `maximumResponseSize`
/// (10 000): Tern refuses it at its head (`responseTooLarge`) and tells the transport to stop.
/// Recorded, then replayed with the same configuration.
///
/// Through URLSession (FoundationNetworking), the exchange ends, as observed in the file, with no
/// error reported (the stop's cancel is queued, SessionExchanges.cancel), and no chunk after
/// the stop is passed on. `RecordingReceiver` then
/// keeps the exchange as a whole `200` with an empty body (no `_transportError`, no `_open`), and
/// replay, which drops `Content-Length` for a whole answer, hands the app a 0-byte body as a
/// success: the request that failed `responseTooLarge` while recording succeeds, empty, on
/// replay. Through libcurl the stop ends as an error (`_transportError: -1`), the length is
/// replayed, and the refusal comes again: this test passes on libcurl and fails on URLSession.
///
/// RecordingAndReplaying.md: a recording replays "offline, exact"; the brief's promise: "never
/// a silently wrong answer". Cause, as read: `RecordingReceiver.didReceive(_ head:)` passes the
/// pipeline's `.stop` on but does not remember it, so `entry(error:)` records a stopped exchange
/// as a whole one when the transport reports no error (URLSessionTransport's `obey(.stop)`,
/// SessionExchanges.swift).
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingStoppedAtHeadAttackTests {
    static let body = Data(repeating: 0x61, count: 50_000)

    func request(_ api: TestAPI) async -> Result<Data, any Error> {
        // Bounded well under the suite's minute: a replay that hangs is seen as one.
        await withTaskGroup(of: Result<Data, any Error>?.self) { group in
            group.addTask { await (api.request(route: api.get(endpoint: "/big")) as Promise<Data>).result }
            group.addTask {
                try? await Task.sleep(nanoseconds: 20_000_000_000)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .failure(CancellationError())
        }
    }

    @Test func aResponseRefusedAtItsHeadReplaysRefusedAtItsHead() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let server = try LoopbackServer { _ in ServerResponse(headers: ["Content-Type": "application/octet-stream"], body: Self.body) }
        let baseURL = server.baseURL
        let configuration = APIConfiguration(maximumResponseSize: 10_000, retryPolicy: .never)
        let recording = try TestAPI(baseURL: baseURL, configuration: configuration,
                                    transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()))
        let recorded = await request(recording)
        server.stop()
        guard case .failure(APIError.responseTooLarge) = recorded else {
            Issue.record("recorded \(recorded)")
            return
        }
        let entries = try recordedEntries(in: file)
        let replaying = try TestAPI(baseURL: baseURL, configuration: configuration, transport: RecordingTransport(file: file, mode: .replay))
        let replayed = await request(replaying)
        switch replayed {
        case .failure(APIError.responseTooLarge): break
        default: Issue.record("recorded responseTooLarge, replayed \(replayed); the file: \(entries)")
        }
    }
}
