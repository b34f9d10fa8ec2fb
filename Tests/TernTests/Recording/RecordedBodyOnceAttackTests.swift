import Foundation
import Testing
import Tern
import TernTesting

/// Recording an upload whose body gives other bytes each time it is read (a file changed in
/// between, a live source behind `BodyParameters(length:makeStream:)`): the recording transport
/// read it once to record and again to send, so the recording said the server got bytes it
/// never got, and replay matched requests against them. It sends what it recorded, and makes
/// the stream once an attempt.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordedBodyOnceAttackTests {
    @Test func theServerGetsTheBodyTheRecordingHolds() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let received = Recorder<Data>()
        let server = try LoopbackServer { request in
            received.append(request.body)
            return .json("{}")
        }
        defer { server.stop() }
        let made = Recorder<Int>()
        let recorder = try RecordingTransport(file: file, mode: .record, upstream: TestTransport.make())
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: recorder, responseQueue: .global())
        let _: Response = try await api.request(route: .post(server.baseURL + "/readings"), parameters: BodyParameters(length: 4, contentType: "text/plain") {
            made.append(made.items.count)
            return InputStream(data: Data((made.items.count == 1 ? "AAAA" : "BBBB").utf8))
        }).value
        #expect(received.items == [Data("AAAA".utf8)])
        #expect(made.items.count == 1)
        let entries = try recordedEntries(in: file)
        let postData = (entries.first?["request"] as? [String: Any])?["postData"] as? [String: Any]
        #expect(postData?["text"] as? String == "AAAA", "\(String(describing: postData))")
    }

    /// A stream of no stated length goes chunked, as the app sends it, and one of a stated
    /// length with it: recorded, each goes as it would without the recording.
    @Test(arguments: [nil, 4] as [Int64?]) func aStreamKeepsItsFraming(length: Int64?) async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let framing = Recorder<String>()
        let server = try LoopbackServer { request in
            framing.append(request.headers["Transfer-Encoding"] ?? "length \(request.headers["Content-Length"] ?? "none")")
            return .json("{}")
        }
        defer { server.stop() }
        let recorder = try RecordingTransport(file: file, mode: .record, upstream: TestTransport.make())
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: recorder, responseQueue: .global())
        let _: Response = try await api.request(route: .post(server.baseURL + "/readings"), parameters: BodyParameters(length: length, contentType: "text/plain") {
            InputStream(data: Data("AAAA".utf8))
        }).value
        #expect(framing.items == [length == nil ? "chunked" : "length 4"])
    }
}
