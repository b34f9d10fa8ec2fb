import Foundation
import Testing
import Tern
import TernTesting

/// Archives whose values pass the file's checks and lie when replayed: a chunk of more bytes
/// than any body has, a status no final response has. Each replays its body or fails typed;
/// never a crash of the test run.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingArchiveLieAttackTests {
    static let body = Data("a tern".utf8).base64EncodedString()

    /// Replays `text` for `GET /p`, paced on a clock that is never moved (chunks recorded with no
    /// pause come unmoved): the error making the transport or answering, or the body.
    func replay(_ text: String) async -> Result<Data, any Error> {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        do {
            try Data(text.utf8).write(to: file.creatingDirectory())
            let api = try TestAPI(baseURL: "https://shop.example", configuration: APIConfiguration(retryPolicy: .never),
                                  transport: RecordingTransport(file: file, mode: .replay, clock: TestClock()))
            let data: Data = try await api.request(route: api.get(endpoint: "/p")).value
            return .success(data)
        } catch {
            return .failure(error)
        }
    }

    /// Chunk sizes that add up past `Int.max` (each one alone passes the file's check, and a
    /// body scrubbed of a token is shorter than its chunks, so sizes may exceed it): the body
    /// replays whole, once. Before, adding the second size to the first trapped (overflow),
    /// and the whole test run crashed.
    @Test(arguments: [[1, Int.max], [Int.max, Int.max], [3, Int.max - 2, Int.max]])
    func chunksOfMoreBytesThanAnyBodyReplayTheBodyOnce(sizes: [Int]) async throws {
        let chunks = sizes.map { #"{"after": 0, "size": \#($0)}"# }.joined(separator: ", ")
        let entry = HostileArchiveTests.entry(response: HostileArchiveTests.response(content: #"{"text": "\#(Self.body)", "encoding": "base64"}"#),
                                               extra: #", "_chunks": [\#(chunks)]"#)
        let data = try await replay(RecordingTransportTests.archive(entries: [entry])).get()
        #expect(String(decoding: data, as: UTF8.self) == "a tern")
    }

    /// A status no final response has (an interim 1xx, a 101 that switches protocols with no
    /// protocol to switch to) or none HTTP names: a typed error, or the body as recorded; never
    /// a hang or a crash.
    @Test(arguments: [100, 101, 102, 103, 199, 600, 999])
    func anInterimOrUnnamedStatusIsTypedOrItsBody(status: Int) async {
        let entry = HostileArchiveTests.entry(response: HostileArchiveTests.response(status: "\(status)", content: #"{"text": "\#(Self.body)", "encoding": "base64"}"#))
        switch await replay(RecordingTransportTests.archive(entries: [entry])) {
        case .success(let data): #expect(String(decoding: data, as: UTF8.self) == "a tern")
        case .failure(let error): #expect(error is APIError, "\(error)")
        }
    }
}
