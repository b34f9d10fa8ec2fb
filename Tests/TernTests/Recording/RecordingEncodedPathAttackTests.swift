import Foundation
import Testing
import Tern
import TernTesting

/// Paths that differ only where one encodes a character that divides a path (`%2F`, a slash in
/// a name) name two resources: a file `a/b` in a folder `files`, and `b` in the folder
/// `files/a`. Replayed in another order than recorded, each is answered with its own answer.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingEncodedPathAttackTests {
    /// Before, both paths were matched decoded, as one (`/files/a/b`): each request took the
    /// first answer recorded for either, and `a/b`'s answer went to `b`'s request.
    @Test func anEncodedSlashNamesAnotherResourceOnReplay() async throws {
        let server = try LoopbackServer { request in ServerResponse(headers: ["Content-Type": "text/plain"], body: Data(request.path.utf8)) }
        defer { server.stop() }
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let configuration = APIConfiguration(retryPolicy: .never)
        let paths = ["/files/a%2Fb", "/files/a/b"]
        let recording = AbstractAPI(configuration: configuration,
                                    transport: try RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()), responseQueue: .global())
        for path in paths {
            let answer: Response = try await recording.request(route: .get(server.baseURL + path)).value
            #expect(String(decoding: answer.body, as: UTF8.self) == path, "recorded")
        }
        let replaying = AbstractAPI(configuration: configuration,
                                    transport: try RecordingTransport(file: file, mode: .replay), responseQueue: .global())
        for path in paths.reversed() {
            let answer: Response = try await replaying.request(route: .get(server.baseURL + path)).value
            #expect(String(decoding: answer.body, as: UTF8.self) == path, "replayed")
        }
    }
}
