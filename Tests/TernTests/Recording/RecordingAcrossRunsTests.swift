import Foundation
import Testing
import Tern
import TernTesting

/// What changes from one run of a test to the next, which a recording must match all the same:
/// the port a loopback server takes, and the order `JSONEncoder` on Linux writes an object's
/// members in, inside a multipart form as well as in a whole JSON body.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingAcrossRunsTests {
    /// A run records against one loopback server; the next run's server takes another port, and
    /// in `.missing` mode the recording answers what it holds (that server sees none of it) and
    /// sends the rest.
    @Test func aRecordingMadeAgainstALoopbackServerAnswersTheNextRunsOnAnotherPort() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        func run(answering body: String) async throws -> (answers: [String], seen: [String], port: Int) {
            let seen = Recorder<String>()
            let server = try LoopbackServer { request in
                seen.append(request.path)
                return .json(body)
            }
            defer { server.stop() }
            let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(retryPolicy: .never),
                                  transport: RecordingTransport(file: file, mode: .missing, upstream: TestTransport.make()))
            var answers: [String] = []
            for path in ["/products", body == "[1]" ? "/products" : "/orders"] {
                let data: Data = try await api.request(route: api.get(endpoint: path)).value
                answers.append(String(decoding: data, as: UTF8.self))
            }
            return (answers, seen.items, server.port)
        }
        let first = try await run(answering: "[1]")
        let second = try await run(answering: "[2]")
        #expect(first.port != second.port)
        #expect(first.answers == ["[1]", "[1]"] && first.seen == ["/products", "/products"])
        #expect(second.answers == ["[1]", "[2]"], "the recorded answer, then the new server's")
        #expect(second.seen == ["/orders"], "the recorded request was not sent again")
    }

    /// A multipart form with a JSON part and a file part, recorded with its body matched; replayed
    /// with the JSON part's members in another order and other spacing, it is answered, and with
    /// one value changed, it is not. `large`: the body is over 64 KiB, kept as its digest.
    @Test(arguments: [false, true])
    func aJSONPartMatchesAsValuesWhateverTheOrderOfItsMembers(large: Bool) async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let tarball = Data((0..<(large ? 70_000 : 300)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        func publish(_ api: TestAPI, metadata: String) async throws -> String {
            let form = MultipartParameters(parts: [
                Part(name: "metadata", data: Data(metadata.utf8), mimeType: "application/json"),
                Part(name: "tarball", data: tarball, filename: "tern-1.0.0.tgz", mimeType: "application/gzip"),
            ])
            let data: Data = try await api.request(route: api.post(endpoint: "/packages"), parameters: form).value
            return String(decoding: data, as: UTF8.self)
        }
        let server = try LoopbackServer { _ in .json(#"{"published": true}"#) }
        let options = RecordingOptions(matchesBody: true)
        let recording = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(retryPolicy: .never),
                                    transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make(), options: options))
        let recorded = try await publish(recording, metadata: #"{"name":"tern","version":"1.0.0","keywords":["http","swift"],"license":null}"#)
        let baseURL = server.baseURL
        server.stop()

        let replaying = try TestAPI(baseURL: baseURL, configuration: APIConfiguration(retryPolicy: .never),
                                    transport: RecordingTransport(file: file, mode: .replay, options: options))
        let replayed = try await publish(replaying, metadata: #"{ "license": null, "keywords": ["http", "swift"], "version": "1.0.0", "name": "tern" }"#)
        #expect(recorded == #"{"published": true}"#)
        #expect(replayed == recorded)
        let changed = await apiError(of: replaying.request(route: replaying.post(endpoint: "/packages"), parameters: MultipartParameters(parts: [
            Part(name: "metadata", data: Data(#"{"license":null,"keywords":["http","swift"],"version":"1.0.1","name":"tern"}"#.utf8), mimeType: "application/json"),
            Part(name: "tarball", data: tarball, filename: "tern-1.0.0.tgz", mimeType: "application/gzip"),
        ])) as Promise<Data>)
        guard case .transportFailed(let failure)? = changed, failure.underlying is UnmatchedRequest else {
            Issue.record("expected an unmatched request, got \(String(describing: changed))")
            return
        }
    }
}
