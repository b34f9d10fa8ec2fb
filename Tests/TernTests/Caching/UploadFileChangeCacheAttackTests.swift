import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A file upload whose file grows or shrinks while it is sent, through an API with no cache, a
/// cache in memory and one on disk, and through a retry (503, then another attempt): the
/// upload fails with the same typed error whatever the cache, nothing of it is stored, and the
/// stored `GET` of its URL is forgotten only when an upload's answer is a 2xx or 3xx.
@Suite(.onTestThreads, .serialized, .timeLimit(.minutes(2))) struct UploadFileChangeCacheAttackTests {
    enum Cache: String, CaseIterable, Sendable { case none, memory, disk }
    enum Change: String, CaseIterable, Sendable { case grows, shrinks }

    static let size = 8 << 20
    static let changedSize = 64 << 20

    /// What the server read of each `PUT`, and how many `GET`s it answered.
    final class Server: Sendable {
        let puts = Recorder<Int>()
        let gets = Recorder<Int>()
        let heads = Recorder<String>()
        let raw: RawServer

        /// `putStatus` answers the `PUT` numbered (from 1) with a status line, once it has read
        /// the body whole; `gate` holds each `PUT`'s reading until the test has changed the file.
        init(gate: DispatchSemaphore?, putStatus: @escaping @Sendable (Int) -> String) throws {
            let (puts, gets, heads) = (puts, gets, heads)
            raw = try RawServer { connection in
                while let head = connection.readHead() {
                    heads.append(head)
                    if head.hasPrefix("GET") {
                        gets.append(1)
                        let body = "version \(gets.items.count)"
                        guard connection.send(RawServer.Connection.response(body, headers: "Cache-Control: max-age=600\r\n")) else { return }
                        continue
                    }
                    _ = gate?.wait(timeout: .now() + 30)
                    // URLSession on Linux sends a large file chunked, with no length.
                    let announced = ExpectContinueAttackTests.field("Content-Length", in: head).flatMap(Int.init)
                    let read = announced.map { connection.discard($0, within: 30) } ?? Self.discardChunked(connection)
                    puts.append(read ?? -1)
                    guard let read, announced == nil || read == announced else { return }
                    let status = putStatus(puts.items.count)
                    guard connection.send(RawServer.Connection.response("put \(read)", status: status)) else { return }
                }
            }
        }

        deinit { raw.stop() }

        /// Reads a chunked body to its end, keeping none of it: how many bytes it held, or nil
        /// if it did not end within 30 seconds (or the client closed first).
        static func discardChunked(_ connection: RawServer.Connection) -> Int? {
            var total = 0
            var line = [UInt8]()
            var remaining = 0   // bytes of data left in the current chunk, then its CRLF
            var inData = false
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                let bytes = connection.readAvailable(for: 1, limit: 1 << 20)
                if bytes.isEmpty { continue }
                var index = 0
                while index < bytes.count {
                    if inData {
                        let take = min(remaining, bytes.count - index)
                        index += take
                        remaining -= take
                        if remaining == 0 { inData = false }
                        continue
                    }
                    line.append(bytes[index])
                    index += 1
                    guard line.count >= 2, line[line.count - 2] == 13, line[line.count - 1] == 10 else { continue }
                    let text = String(decoding: line.dropLast(2), as: UTF8.self)
                    line.removeAll()
                    if text.isEmpty { continue }   // the CRLF after a chunk's data
                    guard let size = Int(text.split(separator: ";").first ?? "", radix: 16) else { return nil }
                    if size == 0 { return total }
                    total += size
                    (remaining, inData) = (size, true)
                }
            }
            return nil
        }
    }

    static func api(_ cache: Cache, directory: URL, retryPolicy: RetryPolicy = .never) throws -> AbstractAPI {
        let kept: HTTPCache? = switch cache {
        case .none: nil
        case .memory: HTTPCache(maximumBytes: 64 << 20, maximumResponseBytes: 32 << 20)
        case .disk: try HTTPCache(directory: directory, maximumBytes: 64 << 20, maximumResponseBytes: 32 << 20)
        }
        return AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: retryPolicy, cache: kept), transport: TestTransport.make(),
                           responseQueue: .global())
    }

    static func change(_ change: Change, _ file: URL) throws {
        switch change {
        case .grows:
            let handle = try FileHandle(forWritingTo: file)
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(repeating: 2, count: 1 << 20))
            try handle.close()
        case .shrinks:
            #expect(truncate(file.path, off_t(1 << 20)) == 0)
        }
    }

    /// The error as a string that names its case and the body's mismatch, the same through
    /// any cache.
    static func describe(_ result: Result<String, any Error>) -> String {
        switch result {
        case .success(let text): return "success \(text)"
        case .failure(let error as APIError):
            guard case .transportFailed(let failure) = error else { return "\(error.caseName) \(error)" }
            guard let mismatch = failure.underlying as? BodyLengthMismatch else { return "transportFailed \(failure)" }
            return "transportFailed \(mismatch.statedLength) \(mismatch.actualLength > mismatch.statedLength ? "long" : "short")"
        case .failure(let error): return "untyped \(error)"
        }
    }

    /// A file of `size` bytes (sparse, so that neither writing nor reading it costs), and a
    /// directory for a cache, removed after `body`.
    static func withFile<T>(size: Int = size, _ body: (URL, URL) async throws -> T) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-upload-cache-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("upload")
        #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
        #expect(truncate(file.path, off_t(size)) == 0)
        return try await body(file, directory.appendingPathComponent("cache"))
    }

    /// The file (64 MiB, more than any buffer on the way holds) changed while the server holds
    /// its reading: the upload fails typed, the same through every cache (the body stopped at
    /// its stated length, or short of it), and the `GET` kept before it is still served from
    /// the cache. (A transport may have read the file before the change and send it whole as
    /// it was: then the `201` forgets the `GET`, as it would any other upload's.)
    @Test(arguments: Change.allCases)
    func aFileChangedWhileSentFailsAlikeThroughEveryCacheAndForgetsNothing(change: Change) async throws {
        var outcomes: [Cache: String] = [:]
        for cache in Cache.allCases {
            let gate = DispatchSemaphore(value: 0)
            let server = try Server(gate: gate) { _ in "201 Created" }
            try await Self.withFile(size: Self.changedSize) { file, directory in
                let api = try Self.api(cache, directory: directory)
                let url = server.raw.baseURL + "/doc"
                let first = try await (api.request(route: .get(url)) as Promise<Response>).value
                #expect(String(decoding: first.body, as: UTF8.self) == "version 1")
                let upload: Promise<String> = api.request(route: .put(url), parameters: BodyParameters(file))
                #expect(await eventually { server.heads.items.count == 2 })
                try Self.change(change, file)
                gate.signal()
                let outcome = Self.describe(await upload.result)
                outcomes[cache] = outcome
                let after = try await (api.request(route: .get(url)) as Promise<Response>).value
                let forgotten = cache == .none || outcome.hasPrefix("success")
                #expect(String(decoding: after.body, as: UTF8.self) == (forgotten ? "version 2" : "version 1"), "\(cache) \(change): \(outcome)")
                #expect(after.cacheOutcome == (cache == .none ? nil : forgotten ? .miss : .hit), "\(cache) \(change): \(outcome)")
            }
        }
        #expect(Set(outcomes.values).count == 1, "\(outcomes)")
        let outcome = outcomes[.none] ?? ""
        // The body stopped where it ran past its length or short of it; or, read before the
        // change, sent whole as it was.
        let stopped = "transportFailed \(Self.changedSize) \(change == .grows ? "long" : "short")"
        #expect(outcome == stopped || outcome == "success put \(Self.changedSize)", "\(outcome)")
    }

    /// A `PUT` answered 503, the file changed before its retry: the retry sends the file as it
    /// is then, whole (the server reads all it announced), or fails typed; a retry answered
    /// `201` forgets the kept `GET`, one that failed leaves it served.
    @Test(arguments: Change.allCases, [Cache.memory, Cache.disk])
    func aFileChangedBeforeItsRetryIsSentWholeOrFailsTyped(change: Change, cache: Cache) async throws {
        let changed = Recorder<Bool>()
        let fileBox = Recorder<URL>()
        let server = try Server(gate: nil) { number in
            if number == 1 {
                // Changed before the client hears the 503 and tries again.
                if let file = fileBox.items.first { try? Self.change(change, file); changed.append(true) }
                return "503 Service Unavailable"
            }
            return "201 Created"
        }
        try await Self.withFile { file, directory in
            fileBox.append(file)
            let retry = RetryPolicy(maxRetries: 1, baseDelay: 0.1, methods: [.put], statusCodes: [503], jitter: false)
            let api = try Self.api(cache, directory: directory, retryPolicy: retry)
            let url = server.raw.baseURL + "/doc"
            #expect(String(decoding: try await (api.request(route: .get(url)) as Promise<Response>).value.body, as: UTF8.self) == "version 1")
            let result: Result<String, any Error> = await api.request(route: .put(url), parameters: BodyParameters(file)).result
            #expect(changed.items.count == 1)
            let after = try await (api.request(route: .get(url)) as Promise<Response>).value
            let newSize = change == .grows ? Self.size + (1 << 20) : 1 << 20
            switch result {
            case .success(let text):
                #expect(text == "put \(newSize)", "the retry sent \(text), the file being \(newSize) bytes")
                #expect(server.puts.items == [Self.size, newSize])
                #expect(String(decoding: after.body, as: UTF8.self) == "version 2" && after.cacheOutcome == .miss)
            case .failure(let error):
                #expect(error is APIError, "\(error)")
                #expect(String(decoding: after.body, as: UTF8.self) == "version 1" && after.cacheOutcome == .hit)
            }
        }
    }
}
