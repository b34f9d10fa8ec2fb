import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Recording where it meets the other features: a download cut and resumed with `Range`, a run
/// set to record with no server to reach, pins checked while recording.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingSeamAttackTests {
    func entries(_ file: URL) throws -> [[String: Any]] { try recordedEntries(in: file) }

    /// A download whose connection is lost halfway and which Tern resumes with `Range`: the cut
    /// exchange is recorded with what came of it, so that replay cuts it at the same byte and
    /// resumes the same way, to the same file.
    @Test func aDownloadCutAndResumedWithARangeReplaysToTheSameFile() async throws {
        let file = scratchRecording()
        let folder = file.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let body = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 8) })
        let server = try LoopbackServer { request in
            var response = ServerResponse.file(body, for: request, etag: #""v1""#)
            response.headers["Content-Type"] = "application/octet-stream"
            return request.headers["Range"] == nil ? response.with(.truncated(afterBytes: 70_000)) : response
        }
        let baseURL = server.baseURL
        let configuration = APIConfiguration(retryPolicy: RetryPolicy(baseDelay: 0.001, jitter: false))
        let recording = try TestAPI(baseURL: baseURL, configuration: configuration,
                                    transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()))
        let recorded = try await recording.download(route: recording.get(endpoint: "/file.bin"), to: folder.appendingPathComponent("recorded.bin")).value
        server.stop()
        #expect(try Data(contentsOf: recorded.fileURL) == body)
        #expect(try entries(file).count == 2, "the cut exchange and the resumed one")

        let replaying = try TestAPI(baseURL: baseURL, configuration: configuration, transport: RecordingTransport(file: file, mode: .replay))
        let replayed = try await replaying.download(route: replaying.get(endpoint: "/file.bin"), to: folder.appendingPathComponent("replayed.bin")).value
        #expect(try Data(contentsOf: replayed.fileURL) == body)
        #expect(replayed.response.statusCode == recorded.response.statusCode)
    }

    /// With the HTTP cache on: a hit never reaches the transport and is not recorded; replayed
    /// with a cache of its own, the first request fills it from the file and the second is its
    /// hit again; a 304 revalidation recorded answers on replay.
    @Test func theCachesHitsAndRevalidationsReplayAsRecorded() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let hits = Recorder<String>()
        let server = try LoopbackServer { request in
            hits.append(request.path)
            if request.headers["If-None-Match"] == #""v1""# { return ServerResponse(status: 304, headers: ["ETag": #""v1""#, "Cache-Control": "max-age=0"]) }
            var response = ServerResponse.json(#"{"name": "\#(request.path.dropFirst())", "price": 1}"#)
            response.headers["ETag"] = #""v1""#
            response.headers["Cache-Control"] = request.path == "/fresh" ? "max-age=600" : "max-age=0"
            return response
        }
        let baseURL = server.baseURL
        func session(_ transport: RecordingTransport) async throws -> [Product] {
            let api = try TestAPI(baseURL: baseURL, configuration: APIConfiguration(retryPolicy: .never, cache: HTTPCache()), transport: transport)
            var products: [Product] = []
            for path in ["/fresh", "/fresh", "/stale", "/stale"] { products.append(try await api.request(route: api.get(endpoint: path)).value) }
            return products
        }
        let recorded = try await session(RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()))
        server.stop()
        #expect(hits.items == ["/fresh", "/stale", "/stale"], "the fresh one's second was a hit; the stale one's, a 304")
        #expect(try entries(file).count == 3)
        #expect(try await session(RecordingTransport(file: file, mode: .replay)) == recorded)
    }

    /// Record-if-missing, the default: an attempt that lost its connection is recorded, and its
    /// retry goes to the server, not to the failure just recorded; replay then goes the same way.
    @Test func aRetryAfterALostConnectionReachesTheServerWhenRecordingWhatIsMissing() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let hits = Recorder<String>()
        let server = try LoopbackServer { request in
            hits.append(request.path)
            return hits.items.count == 1 ? ServerResponse().with(.hangUp) : .json(#"{"name": "auk", "price": 1}"#)
        }
        let baseURL = server.baseURL
        let configuration = APIConfiguration(retryPolicy: RetryPolicy(baseDelay: 0.001, jitter: false))
        let recording = try TestAPI(baseURL: baseURL, configuration: configuration,
                                    transport: RecordingTransport(file: file, mode: .missing, upstream: TestTransport.make()))
        let recorded: Product = try await recording.request(route: recording.get(endpoint: "/flaky")).value
        server.stop()
        #expect(hits.items == ["/flaky", "/flaky"])
        #expect(try entries(file).count == 2)

        let replaying = try TestAPI(baseURL: baseURL, configuration: configuration, transport: RecordingTransport(file: file, mode: .missing))
        #expect(try await replaying.request(route: replaying.get(endpoint: "/flaky")).value == recorded)
    }

    /// `TERN_RECORDING=record` in a run where the server is down: each request fails with a
    /// typed error, and the recording made earlier is not replaced by a file of failures.
    @Test func recordingWithNoServerFailsTypedAndKeepsTheRecordingThere() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let closed = try ClosedPort()
        let good = RecordingTransportTests.archive(entries: [RecordingTransportTests.entry("GET", closed.baseURL + "/products", body: "[]")])
        try Data(good.utf8).write(to: file.creatingDirectory())
        let api = try TestAPI(baseURL: closed.baseURL, configuration: APIConfiguration(retryPolicy: .never),
                              transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()))
        let error = await apiError(of: api.request(route: api.get(endpoint: "/products")) as Promise<[Product]>)
        #expect(error?.caseName == "transportFailed")
        #expect(try String(contentsOf: file, encoding: .utf8) == good)
    }
}

#if os(Linux)
/// Pins while recording: the recorder hands the request, pins and all, to the real transport,
/// which refuses a server whose key is not pinned; nothing is recorded that replay would then
/// answer as if the pins had passed.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingPinsTests {
    @Test func recordingChecksThePinsAndKeepsNoAnswerAWrongPinRefused() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let server = try CertificatePinningTests.RelayingServer()
        let recorder = try RecordingTransport(file: file, mode: .record, upstream: CurlTransport(trusting: server.certificates.authority))
        let wrong = try CertificatePinningTests.api(["127.0.0.1": [CertificatePinningTests.wrongPin]], transport: recorder,
                                                    configuration: APIConfiguration(timeout: 10, retryPolicy: .never))
        let result = await (wrong.request(route: .get(server.url + "/open")) as Promise<Data>).result
        guard case .failure(APIError.pinningFailed) = result else { Issue.record("expected pinningFailed, got \(result)"); return }
        #expect(server.requestBytes == 0)
        let right = try CertificatePinningTests.api(["127.0.0.1": [try server.serverPin]], transport: recorder,
                                                    configuration: APIConfiguration(timeout: 10, retryPolicy: .never))
        let data: Data = try await right.request(route: .get(server.url + "/open")).value

        let replayer = try RecordingTransport(file: file, mode: .replay)
        let replaying = try CertificatePinningTests.api(["127.0.0.1": [try server.serverPin]], transport: replayer,
                                                        configuration: APIConfiguration(timeout: 10, retryPolicy: .never))
        #expect(try await replaying.request(route: .get(server.url + "/open")).value == data)
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(!text.contains("_transportError"), "the refused exchange is not kept")
    }
}
#endif
