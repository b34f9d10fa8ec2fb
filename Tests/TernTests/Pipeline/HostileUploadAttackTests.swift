import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tern

/// Uploads of a file, whole or as a multipart part, whose transport fails in the middle of the
/// body, or reports its progress out of order, under a retry policy: each settles once, the
/// file Tern assembled for a multipart body is deleted, no descriptor is left open on either
/// file, and the API and its transport are let go.
@Suite(.onTestThreads, .timeLimit(.minutes(1)))
struct HostileUploadAttackTests: EarlyAnswerAttack {
    /// Notes the file each attempt's body came from.
    final class RecordsBodies: Hostile, @unchecked Sendable {   // unchecked: as its base, its state is `let`s
        let bodyFiles = Recorder<URL>()

        override func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
            if case .file(let file) = request.body { bodyFiles.append(file) }
            return super.send(request, to: receiver)
        }
    }

    enum Source: String, Sendable, CaseIterable {
        case file, multipart
    }

    static let size: Int64 = 300_000

    /// The process's descriptors open on any of `files` (the test's own, so others running
    /// alongside do not count).
    static func descriptors(openOn files: [URL]) -> [String] {
        let paths = Set(files.map { $0.resolvingSymlinksInPath().path })
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.compactMap { entry in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry) else { return nil }
            return paths.contains(target) || paths.contains(target.replacingOccurrences(of: " (deleted)", with: "")) ? target : nil
        }
    }

    /// Runs `body` with a file of `size` bytes and its parameters, then checks that nothing is
    /// left open on it or on the file a multipart body was assembled in, and that the latter is gone.
    static func uploading(_ source: Source, _ transport: @autoclosure () -> RecordsBodies,
                          _ configuration: APIConfiguration,
                          _ body: (AbstractAPI, Hostile, any RequestParameters) async throws -> Void) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-hostile-upload-\(UUID())")
        try Data(repeating: 5, count: Int(size)).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let parameters: any RequestParameters = switch source {
        case .file: BodyParameters(file)
        case .multipart: MultipartParameters(parts: [Part(name: "file", fileURL: file, filename: "f.bin")])
        }
        let assembled = Recorder<URL>()
        try await attack(transport(), configuration) { api, transport in
            try await body(api, transport, parameters)
            for sent in (transport as? RecordsBodies)?.bodyFiles.items ?? [] where sent != file { assembled.append(sent) }
        }
        let files = [file] + assembled.items
        #expect(await eventually(timeout: 10) { descriptors(openOn: files).isEmpty }, "left open: \(descriptors(openOn: files))")
        for sent in assembled.items {
            #expect(await eventually(timeout: 10) { !FileManager.default.fileExists(atPath: sent.path) }, "left \(sent.lastPathComponent)")
        }
    }

    /// What the first attempt reports: part of the body, then the connection is lost.
    static let cut: [Step] = [.sent(size / 3, of: nil), .end(.networkConnectionLost)]

    static func whole(_ length: Int64?) -> [Step] {
        [.sent(length ?? size, of: nil), .head(200), .chunk("ok"), .end()]
    }

    @Test(arguments: Source.allCases, Place.allCases) func anUploadCutMidwayIsRetried(source: Source, place: Place) async throws {
        let configuration = APIConfiguration(timeout: 10, retryPolicy: RetryPolicy(maxRetries: 2, baseDelay: 0.01, jitter: false))
        try await Self.uploading(source, RecordsBodies(place, answers: [Self.cut, Self.whole(nil)]), configuration) { api, transport, parameters in
            let promise: Promise<String> = api.request(route: .put(Self.url), parameters: parameters)
            #expect(await Self.value(of: promise) == "ok")
            #expect(transport.requests.items.count == 2)
        }
    }

    /// Cut midway each time: the retries spent, the request fails with the network's error.
    @Test(arguments: Source.allCases, Place.allCases) func anUploadCutEveryTimeFailsOnce(source: Source, place: Place) async throws {
        let configuration = APIConfiguration(timeout: 10, retryPolicy: RetryPolicy(maxRetries: 2, baseDelay: 0.01, jitter: false))
        try await Self.uploading(source, RecordsBodies(place, answers: [Self.cut]), configuration) { api, transport, parameters in
            let results = await Self.results(of: api.request(route: .put(Self.url), parameters: parameters) as Promise<String>)
            #expect(results.count == 1)
            guard case .failure(APIError.transportFailed(let failure))? = results.first else {
                Issue.record("\(results)")
                return
            }
            #expect((failure.underlying as? URLError)?.code == .networkConnectionLost)
            #expect(transport.requests.items.count == 3)
        }
    }

    /// A POST is not retried: it fails with the cut.
    @Test(arguments: Source.allCases) func aPostCutMidwayFailsOnce(source: Source) async throws {
        let configuration = APIConfiguration(timeout: 10, retryPolicy: RetryPolicy(maxRetries: 2, baseDelay: 0.01, jitter: false))
        try await Self.uploading(source, RecordsBodies(.otherThread, answers: [Self.cut]), configuration) { api, _, parameters in
            let results = await Self.results(of: api.request(route: .post(Self.url), parameters: parameters) as Promise<String>)
            #expect(results.count == 1)
            if case .failure(APIError.transportFailed)? = results.first {} else { Issue.record("\(results)") }
        }
    }

    /// Cancelled while the body goes out, from the transport's thread.
    @Test(arguments: Source.allCases, Place.allCases) func anUploadCancelledMidway(source: Source, place: Place) async throws {
        let hook = Hook()
        let steps: [Step] = [.sent(Self.size / 3, of: nil), .run(hook), .sent(Self.size, of: nil), .head(200), .chunk("ok"), .end()]
        try await Self.uploading(source, RecordsBodies(place, answers: [steps]), APIConfiguration(timeout: 10)) { api, _, parameters in
            let promise: Promise<String> = api.request(route: .put(Self.url), parameters: parameters)
            hook.set { promise.cancel() }
            await Self.settlesOnceTyped(promise, cancelled: true)
        }
    }
}

extension HostileUploadAttackTests {
    /// The check above sees a descriptor open on the file, and no more once it is closed.
    @Test func theDescriptorCheckSeesAnOpenFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-hostile-upload-\(UUID())")
        try Data("x".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let handle = try FileHandle(forReadingFrom: file)
        #expect(Self.descriptors(openOn: [file]).count == 1)
        try handle.close()
        #expect(Self.descriptors(openOn: [file]).isEmpty)
    }

    /// The test's transport against a server that hangs up a third of the way through the first
    /// upload and takes the next whole: the retry is answered, or the request fails typed (as
    /// the transport reads the hang-up), and neither file is left open.
    @Test(arguments: Source.allCases) func aRealUploadCutMidway(source: Source) async throws {
        let size = 4 << 20
        let server = try RawServer { connection in
            guard connection.index > 0 else {
                guard connection.readHead() != nil else { return }
                _ = connection.readAvailable(for: 5, limit: size / 3)
                return
            }
            while connection.readRequest() != nil {
                _ = connection.send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            }
        }
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-hostile-upload-\(UUID())")
        try Data(repeating: 5, count: size).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let parameters: any RequestParameters = switch source {
        case .file: BodyParameters(file)
        case .multipart: MultipartParameters(parts: [Part(name: "file", fileURL: file, filename: "f.bin")])
        }
        let configuration = APIConfiguration(timeout: 30, retryPolicy: RetryPolicy(maxRetries: 2, baseDelay: 0.01, jitter: false))
        let apiGone: WeakRef<AbstractAPI>
        do {
            let api = AbstractAPI(configuration: configuration, transport: TestTransport.make(), responseQueue: .global())
            apiGone = WeakRef(api)
            let results = await Self.results(of: api.request(route: .put(server.baseURL + "/upload"), parameters: parameters) as Promise<String>,
                                             within: 30)
            #expect(results.count == 1)
            switch results.first {
            case .success(let body)?: #expect(body == "ok")
            case .failure(APIError.transportFailed)?: break
            case let other: Issue.record("\(String(describing: other))")
            }
        }
        #expect(await eventually(timeout: 10) { apiGone.isFreed }, "the API outlived its request")
        #expect(await eventually(timeout: 10) { Self.descriptors(openOn: [file]).isEmpty }, "left open: \(Self.descriptors(openOn: [file]))")
    }
}
