import Foundation
import Testing
import Tern
import TernTesting

/// Queries that differ only where one writes a space as `+` (as a form, a browser's search box
/// and many servers' `Link` headers write it: `?q=tern+bird`) and the other encodes a plus
/// (`?q=tern%2Bbird`, as Tern's own `URLParameters` writes the value `tern+bird`) ask for two
/// things: every server that reads a query as a form (RFC 1866, WHATWG's URL standard) reads the
/// first as `tern bird` and the second as `tern+bird`.
///
/// RecordingAndReplaying.md: "A request is answered by a recorded exchange with the same method
/// and URL, its query items in any order", and bodies compare "as fields when both are forms (as
/// query items are)"; and the recording is replayed "offline, exact". Matching read query items
/// with `URLComponents.queryItems`, which leaves a `+` a plus, so both URLs had one key, and
/// each request was answered with the other's answer; a `+` is now read as a space, as the form
/// body's comparison reads it. As `RecordingEncodedPathAttackTests` holds an encoded slash to
/// another resource than a slash.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingQueryPlusAttackTests {
    /// A query value as a server reads it: `+` a space, then percent-decoded.
    static func formValue(_ raw: String) -> String {
        raw.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? raw
    }

    @Test func aPlusThatIsASpaceAndAnEncodedPlusReplayTheirOwnAnswers() async throws {
        let server = try LoopbackServer { request in
            let raw = request.query.split(separator: "=", maxSplits: 1).last.map(String.init) ?? ""
            return ServerResponse(headers: ["Content-Type": "text/plain"], body: Data(Self.formValue(raw).utf8))
        }
        defer { server.stop() }
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let configuration = APIConfiguration(retryPolicy: .never)
        // The space the server's own `Link` wrote as `+`, and the plus Tern's parameters encode.
        let asked: [(send: @Sendable (AbstractAPI) -> Promise<Response>, meant: String)] = [
            ({ api in api.request(route: .get(server.baseURL + "/search?q=tern+bird")) }, "tern bird"),
            ({ api in api.request(route: .get(server.baseURL + "/search"), parameters: URLParameters(["q": "tern+bird"])) }, "tern+bird"),
        ]
        let recording = AbstractAPI(configuration: configuration,
                                    transport: try RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()), responseQueue: .global())
        for request in asked {
            let answer = try await request.send(recording).value
            #expect(String(decoding: answer.body, as: UTF8.self) == request.meant, "recorded")
        }
        let replaying = AbstractAPI(configuration: configuration,
                                    transport: try RecordingTransport(file: file, mode: .replay), responseQueue: .global())
        for request in asked {
            let answer = try await request.send(replaying).value
            #expect(String(decoding: answer.body, as: UTF8.self) == request.meant, "replayed")
        }
    }
}
