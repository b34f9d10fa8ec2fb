import Foundation
import Testing
import Tern
import TernTesting

/// Five requests at once with an expired token: each is refused (401), one refresh runs, each
/// is sent again with the new token. RecordingAndReplaying.md: "Token refresh: a 401, the
/// refresh, the 200: three exchanges, replayed in that order"; replayed, every request comes
/// back as recorded, however the refusals and retries interleave; and the same session made
/// again in the test (a second screen) replays too.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingRefreshRaceAttackTests {
    typealias Session = RecordedSessionTests.Session

    func burst(_ api: TestAPI) async -> [String] {
        await withTaskGroup(of: String.self) { group in
            for index in 0..<5 {
                group.addTask {
                    let result = await (api.request(route: api.get(endpoint: "/me/\(index)")) as Promise<RecordedSessionTests.Me>).result
                    switch result {
                    case .success(let me): return me.name
                    case .failure(let error): return "\(index): \(error)"
                    }
                }
            }
            var names: [String] = []
            for await name in group { names.append(name) }
            return names.sorted()
        }
    }

    @Test func racingRequestsThatShareOneRefreshReplay() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let secrets = RecordedSessionTests.Secrets()
        let fresh = "fresh-\(UUID().uuidString)"
        let server = try LoopbackServer { request in
            if request.path == "/token" { return .json(#"{"access_token": "\#(fresh)", "token_type": "Bearer"}"#) }
            guard request.headers["Authorization"] == "Bearer \(fresh)" else { return ServerResponse(status: 401).with(.delayed(0.05)) }
            return .json(#"{"name": "\#(request.path)"}"#)
        }
        let baseURL = server.baseURL
        let recording = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()))
        let recordingSession = Session(secrets)
        recording.delegate = recordingSession
        let recorded = await burst(recording) + burst(recording)
        server.stop()
        #expect(recorded == (0..<5).map { "/me/\($0)" } + (0..<5).map { "/me/\($0)" })

        let replaying = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .replay))
        let replayingSession = Session(secrets)
        replaying.delegate = replayingSession
        let replayed = await burst(replaying) + burst(replaying)
        #expect(replayed == recorded)
    }
}
