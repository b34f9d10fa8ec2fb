import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Request bodies from each source, checked against what the server received, with their
/// progress; a streamed body is read again from the start by every attempt.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct UploadTests {
    /// A server that records what it receives and answers with `answers` in turn, then 200.
    final class Receiver: Sendable {
        let received = Recorder<RecordedRequest>()
        let server: LoopbackServer

        init(answers: [Int] = []) throws {
            let received = received
            server = try LoopbackServer { request in
                let count = received.appendCounting(request)
                return ServerResponse(status: count <= answers.count ? answers[count - 1] : 200)
            }
        }

        deinit { server.stop() }
    }

    static let payload = patterned(bytes: 400_000, seed: 13)

    enum Source: String, CaseIterable, Sendable {
        case data, file, stream, streamOfUnknownLength
    }

    /// Parameters sending `payload` from `source`; the file, if any, is deleted by the caller.
    static func parameters(_ source: Source, file: URL) throws -> any RequestParameters {
        switch source {
        case .data:
            return BodyParameters(payload)
        case .file:
            try payload.write(to: file)
            return BodyParameters(file)
        case .stream:
            return BodyParameters(length: Int64(payload.count)) { InputStream(data: payload) }
        case .streamOfUnknownLength:
            return BodyParameters { InputStream(data: payload) }
        }
    }

    @Test(arguments: Source.allCases)
    func eachSourceArrivesWholeWithItsProgress(source: Source) async throws {
        let receiver = try Receiver()
        let api = try TestAPI(baseURL: receiver.server.baseURL)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-body-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let seen = Recorder<TransferProgress>()
        try await (api.request(route: api.put(endpoint: "/upload"), parameters: try Self.parameters(source, file: file)) as Promise<Void>)
            .onProgress { seen.append($0) }
            .value
        #expect(receiver.received.items.map(\.body) == [Self.payload])
        #expect(receiver.received.items.first?.headers["Content-Type"] == "application/octet-stream")
        let uploads = seen.items.filter { $0.direction == .upload }
        #expect(await eventually { seen.items.last { $0.direction == .upload }?.completedBytes == Int64(Self.payload.count) })
        #expect(zip(uploads, uploads.dropFirst()).allSatisfy { $0.completedBytes < $1.completedBytes })
        // Tern knows every length here but one, and reports it even where URLSession does not.
        let total = source == .streamOfUnknownLength ? nil : Int64(Self.payload.count)
        #expect(uploads.allSatisfy { $0.totalBytes == total }, "\(uploads.map(\.totalBytes))")
        #expect(uploads.dropLast().allSatisfy { ($0.fractionCompleted ?? 0) < 1 })
    }

    @Test func aStreamIsMadeAgainForARetry() async throws {
        let receiver = try Receiver(answers: [503])
        let api = try TestAPI(baseURL: receiver.server.baseURL,
                              configuration: APIConfiguration(retryPolicy: RetryPolicy(baseDelay: 0.01, jitter: false)))
        let made = Recorder<Int>()
        let parameters = BodyParameters(length: Int64(Self.payload.count)) {
            made.append(1)
            return InputStream(data: Self.payload)
        }
        try await (api.request(route: api.put(endpoint: "/upload"), parameters: parameters) as Promise<Void>).value
        #expect(made.items.count == 2)
        #expect(receiver.received.items.map(\.body) == [Self.payload, Self.payload])
    }

    @Test func aStreamIsMadeAgainAfterA307() async throws {
        let api = try TestAPI()
        let parameters = BodyParameters { InputStream(data: Self.payload) }
        let echo: Echo = try await api.request(route: api.post(endpoint: "/redirect/307?to=/echo"), parameters: parameters).value
        #expect(echo.path == "/echo")
        #expect(echo.body == Self.payload)
    }

    @Test func aStreamThatCannotBeMadeFailsTheRequest() async throws {
        let api = try TestAPI(configuration: APIConfiguration(retryPolicy: .never))
        let parameters = BodyParameters { throw TestError(code: 7) }
        let error = await apiError(of: api.request(route: api.post(endpoint: "/echo"), parameters: parameters) as Promise<Void>)
        guard case .transportFailed(let failure)? = error else {
            Issue.record("expected transportFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.underlying as? TestError == TestError(code: 7))
    }

    @Test func aFileThatIsNotARegularFileIsRefusedBeforeSending() async throws {
        let api = try TestAPI()
        let error = await apiError(of: api.request(route: api.put(endpoint: "/echo"), parameters: BodyParameters(URL(fileURLWithPath: "/dev/zero"))) as Promise<Void>)
        guard case .encodingFailed(let failure)? = error else {
            Issue.record("expected encodingFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.description.contains("not a regular file"))
    }

    /// A file checked when the request was made and swapped for a pipe while the upload waited
    /// for a connection: opening a pipe waits for a writer, and on libcurl's thread it held every
    /// transfer of the transport (the request after it timed out). It fails at once, typed, and
    /// the API goes on; the uploads that read the file before it went are whole.
    @Test(arguments: [false, true]) func aFileSwappedForAPipeWhileWaitingFailsAndHoldsNothingUp(multipart: Bool) async throws {
        let gate = DispatchSemaphore(value: 0)
        let held = Recorder<Int>()
        let server = try LoopbackServer { request in
            guard request.path == "/up" else { return .text("free") }
            held.append(request.bodyLength)
            gate.wait()
            return .text("\(request.bodyLength)")
        }
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-swapped-\(UUID())")
        try Data(repeating: 1, count: 1000).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(timeout: 20, retryPolicy: .never))
        let parameters: any RequestParameters = multipart ? MultipartParameters(parts: [Part(name: "f", fileURL: file)]) : BodyParameters(file)
        let uploads = (0..<20).map { _ in api.request(route: .post(server.baseURL + "/up"), parameters: parameters) as Promise<String> }
        // The host's connections are taken by uploads the server holds; the rest wait.
        #expect(await eventually { held.items.count >= 4 })
        // Put in its place in one step: an upload prepared between a removal and the pipe
        // would find no file at all (under the sanitizer, once).
        let pipe = file.path + ".pipe"
        #expect(mkfifo(pipe, 0o600) == 0)
        #expect(rename(pipe, file.path) == 0)
        for _ in 0..<20 { gate.signal() }
        let free: String = try await api.request(route: .get(server.baseURL + "/free")).value
        #expect(free == "free")
        var refused = 0
        for upload in uploads {
            switch await upload.result {
            case .success(let length):
                #expect(Int(length).map { $0 >= 1000 } == true, "a whole body, got \(length)")
            case .failure(let error):
                #expect("\(error)".contains("is not a regular file"), "\(error)")
                refused += 1
            }
        }
        #expect(refused > 0)
    }

    /// A file body handed to the transport after its file was swapped for a pipe, whose size is
    /// 0: the transport refuses it rather than take that size for the file's and send an empty
    /// body (libcurl never reads an empty one, so the pipe was never opened nor refused; seen
    /// when the upload above was slow enough to be prepared after the swap).
    @Test func aFileBodyThatIsAPipeByTheTimeItIsSentIsRefusedNotSentEmpty() async throws {
        let received = Recorder<Int>()
        let server = try LoopbackServer { request in
            received.append(request.bodyLength)
            return .text("\(request.bodyLength)")
        }
        defer { server.stop() }
        let pipe = FileManager.default.temporaryDirectory.appendingPathComponent("tern-pipe-\(UUID())")
        #expect(mkfifo(pipe.path, 0o600) == 0)
        defer { try? FileManager.default.removeItem(at: pipe) }
        var request = URLRequest(url: URL(string: server.baseURL + "/up")!)
        request.httpMethod = "POST"
        let ending = Ending()
        let transport = try #require(TestTransport.make())
        _ = transport.send(TransportRequest(urlRequest: request, body: .file(pipe)), to: ending)
        #expect(await eventually(timeout: 20) { !ending.ends.items.isEmpty })
        #expect(ending.ends.items.first?.contains("is not a regular file") == true, "\(ending.ends.items)")
        #expect(received.items.isEmpty, "sent with a body of \(received.items)")
    }

    /// How an exchange ended: "ok", or its error.
    final class Ending: TransportReceiver {
        let ends = Recorder<String>()
        func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {}
        func didReceive(_ head: ResponseHead) -> TransferDecision { .proceed }
        func didReceive(_ chunk: Data) -> TransferDecision { .proceed }
        func didComplete(with error: (any Error)?) { ends.append(error.map { "\($0)" } ?? "ok") }
    }

    /// When a ``HeldStream`` is read, and when it may go on.
    final class Hold: Sendable {
        let reads = Recorder<Void>()
        let letGo = DispatchSemaphore(value: 0)
    }

    /// A stream whose first read waits until its hold lets go, then gives `bytes` and ends.
    final class HeldStream: InputStream {
        private let hold: Hold
        private var rest: Data

        init(_ bytes: Data, hold: Hold) {
            rest = bytes
            self.hold = hold
            super.init(data: Data())
        }

        override func open() {}
        override func close() {}
        override var streamStatus: Stream.Status { rest.isEmpty ? .atEnd : .open }
        override var hasBytesAvailable: Bool { !rest.isEmpty }

        override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
            if !rest.isEmpty, rest.startIndex == 0 {
                hold.reads.append(())
                hold.letGo.wait()
            }
            let count = min(maxLength, rest.count)
            rest.copyBytes(to: buffer, count: count)
            rest = Data(rest.dropFirst(count))
            return count
        }
    }

    /// Body streams waiting for their bytes (a recording in progress, bytes fetched from
    /// elsewhere) hold no other request, more of them than this machine has cores: read on
    /// libcurl's thread one held every transfer of the transport, and this GET waited for it.
    /// (Each holds a connection, and fewer than the host's cap, URLSession's 6, are held.)
    @Test func streamsWaitingForTheirBytesHoldNoOtherRequest() async throws {
        let receiver = try Receiver()
        let api = try TestAPI(baseURL: receiver.server.baseURL, configuration: APIConfiguration(timeout: 50, retryPolicy: .never))
        let hold = Hold()
        let uploads = (0..<4).map { _ in
            api.request(route: .post(receiver.server.baseURL + "/upload"),
                        parameters: BodyParameters(length: 5000) { HeldStream(Data(repeating: 7, count: 5000), hold: hold) }) as Promise<Void>
        }
        #expect(await eventually { hold.reads.items.count == uploads.count })
        let answered = await (api.request(route: .get(receiver.server.baseURL + "/meanwhile")) as Promise<Void>).result
        for _ in uploads { hold.letGo.signal() }
        #expect(throws: Never.self) { try answered.get() }
        for upload in uploads { try await upload.value }
        #expect(receiver.received.items.first?.target == "/meanwhile")
        #expect(receiver.received.items.dropFirst().map(\.body) == Array(repeating: Data(repeating: 7, count: 5000), count: uploads.count))
    }

    /// An upload waiting its turn for a connection whose stream then waits for its bytes holds
    /// no answer of the requests before it. Over URLSession on Linux it does: the stream is read
    /// whole (for its length) as the request before it ends, on the session's queue, where the
    /// others' answers wait. Read on a queue of its own there instead, the task was made later,
    /// and cancel storms met FoundationNetworking's crash of a cancel racing a task's start
    /// (twice in a dozen runs of the suite), so that stays as it was.
    @Test(.enabled(if: TestTransport.isCurl, "URLSession on Linux reads a queued upload's stream on the session's queue"))
    func aQueuedStreamWaitingForItsBytesHoldsNoAnswer() async throws {
        let gate = DispatchSemaphore(value: 0)
        let slow = Recorder<Void>()
        let server = try LoopbackServer { request in
            if request.path == "/slow" {
                slow.append(())
                gate.wait()
            }
            return .text(request.path)
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(timeout: 50, retryPolicy: .never))
        // As many as URLSession's connections to a host, 6: the upload waits for one of them.
        let answers = (0..<6).map { _ in api.request(route: .get(server.baseURL + "/slow")) as Promise<String> }
        #expect(await eventually { slow.items.count == answers.count })
        let hold = Hold()
        let upload = api.request(route: .post(server.baseURL + "/upload"),
                                 parameters: BodyParameters(length: 10) { HeldStream(Data(repeating: 7, count: 10), hold: hold) }) as Promise<String>
        for _ in answers { gate.signal() }
        for answer in answers { #expect(try await answer.value == "/slow") }
        hold.letGo.signal()
        #expect(try await upload.value == "/upload")
    }

    /// A server answering before it read the body (a 413, then reading the body away as nginx
    /// does, or closing): the upload ends with the answer, its body no longer read, and the
    /// requests after it get their own answers.
    @Test(arguments: [Source.data, .file, .stream], [false, true])
    func anAnswerBeforeTheBodyEndsTheUploadAndTheNextGetTheirOwn(source: Source, closes: Bool) async throws {
        let size = 8 << 20
        let server = try RawServer { connection in
            while let head = connection.readHead() {
                let path = head.split(separator: " ")[1]
                guard path == "/upload" else {
                    _ = connection.send("HTTP/1.1 200 OK\r\nContent-Length: \(path.count)\r\n\r\n\(path)")
                    continue
                }
                _ = connection.send("HTTP/1.1 413 Payload Too Large\r\nContent-Length: 7\r\n" + (closes ? "Connection: close\r\n" : "") + "\r\ntoo big")
                if closes { return }
                var discarded = 0
                while discarded < size {
                    let bytes = connection.readAvailable(for: 5, limit: size - discarded)
                    guard !bytes.isEmpty else { return }
                    discarded += bytes.count
                }
            }
        }
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-early-\(UUID())")
        try Data(repeating: 3, count: size).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(timeout: 30, retryPolicy: .never))
        let parameters: any RequestParameters = switch source {
        case .file: BodyParameters(file)
        case .stream, .streamOfUnknownLength: BodyParameters(length: Int64(size)) { InputStream(url: file)! }
        case .data: BodyParameters(Data(repeating: 3, count: size))
        }
        let upload = await apiError(of: api.request(route: .post(server.baseURL + "/upload"), parameters: parameters) as Promise<Void>)
        switch upload {
        case .unacceptableStatus(let failure)?: #expect(failure.statusCode == 413)
        case .transportFailed?: break   // FoundationNetworking, still sending as the server closed
        default: Issue.record("expected the 413, got \(String(describing: upload))")
        }
        for index in 0..<3 {
            #expect(try await api.request(route: .get(server.baseURL + "/next\(index)")).value as String == "/next\(index)")
        }
    }

    /// The `BodyLengthMismatch` a promise failed with; records an issue naming what came instead.
    static func lengthMismatch<T>(_ promise: Promise<T>) async -> BodyLengthMismatch? {
        let error = await apiError(of: promise)
        guard case .transportFailed(let failure)? = error, let mismatch = failure.underlying as? BodyLengthMismatch else {
            Issue.record("expected a BodyLengthMismatch, got \(String(describing: error))")
            return nil
        }
        return mismatch
    }

    @Test func aStreamLongerThanItsStatedLengthSmugglesNothing() async throws {
        // The bytes past the stated length are a whole request: sent, the server would answer it
        // as the next one on the connection.
        let receiver = try Receiver()
        let api = try TestAPI(baseURL: receiver.server.baseURL)
        let smuggled = Data("GET /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        let body = Data(repeating: 0x61, count: 1000)
        let parameters = BodyParameters(length: 1000) { InputStream(data: body + smuggled) }
        let seen = Recorder<TransferProgress>()
        let upload: Promise<Void> = api.request(route: api.put(endpoint: "/upload"), parameters: parameters)
        upload.onProgress { seen.append($0) }
        #expect(await Self.lengthMismatch(upload) == BodyLengthMismatch(statedLength: 1000, actualLength: 1001))
        // The next request gets its own answer, and the smuggled one never arrived.
        try await (api.request(route: api.get(endpoint: "/after")) as Promise<Void>).value
        #expect(receiver.received.items.map(\.target) == ["/after"])
        #expect(seen.items.allSatisfy { $0.completedBytes <= 1000 })
    }

    @Test func aStreamShorterThanItsStatedLengthFailsAtOnce() async throws {
        let receiver = try Receiver()
        let api = try TestAPI(baseURL: receiver.server.baseURL,
                              configuration: APIConfiguration(timeout: 120, retryPolicy: .never))
        let parameters = BodyParameters(length: 1000) { InputStream(data: Data(repeating: 0x61, count: 400)) }
        // A long timeout: waiting for it would fail with it, not with the mismatch.
        let upload: Promise<Void> = api.request(route: api.put(endpoint: "/upload"), parameters: parameters)
        #expect(await Self.lengthMismatch(upload) == BodyLengthMismatch(statedLength: 1000, actualLength: 400))
        try await (api.request(route: api.get(endpoint: "/after")) as Promise<Void>).value
        #expect(receiver.received.items.map(\.target) == ["/after"])
    }

    /// Past 16 MiB, URLSession on Linux sends a body chunked, with no length to hold it to: Tern
    /// holds it to its stated length itself.
    @Test(arguments: [(stated: 20 << 20, actual: 1 << 20), (stated: 17 << 20, actual: 18 << 20)])
    func aLargeStreamIsHeldToItsStatedLength(stated: Int, actual: Int) async throws {
        let server = try RawServer { connection in
            guard connection.readHead() != nil else { return }
            _ = connection.readAvailable(for: 30, limit: .max)
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: TestTransport.make(),
                              responseQueue: .global())
        let parameters = BodyParameters(length: Int64(stated)) { InputStream(data: Data(count: actual)) }
        let upload: Promise<Void> = api.request(route: .put(server.baseURL + "/upload"), parameters: parameters)
        let mismatch = await Self.lengthMismatch(upload)
        #expect(mismatch == BodyLengthMismatch(statedLength: Int64(stated), actualLength: Int64(min(actual, stated + 1))))
    }

    @Test func aFileThatShrinksWhileItIsSentFailsAtOnce() async throws {
        // The server takes the head, then waits while the file is cut to half; the body is too
        // large to have left the client by then.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-shrinking-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let size = 64 << 20
        try Data(count: size).write(to: file)
        let (headArrived, cut) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let server = try RawServer { connection in
            guard connection.readHead() != nil else { return }
            headArrived.signal()
            cut.wait()
            // Reading until the half that is left has come (a loaded machine took more than 5 s
            // over URLSession): closed earlier, the client would see a reset, not the mismatch.
            _ = connection.readAvailable(for: 30, limit: size / 2)
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: TestTransport.make(),
                              responseQueue: .global())
        let seen = Recorder<TransferProgress>()
        let upload: Promise<Void> = api.request(route: .put(server.baseURL + "/upload"), parameters: BodyParameters(file))
        upload.onProgress { seen.append($0) }
        #expect(headArrived.wait(timeout: .now() + 10) == .success)
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: UInt64(size / 2))
        try handle.close()
        cut.signal()
        let mismatch = await Self.lengthMismatch(upload)
        #expect(mismatch?.statedLength == Int64(size))
        #expect((mismatch?.actualLength ?? .max) <= Int64(size / 2))
        #expect(seen.items.allSatisfy { $0.completedBytes <= Int64(size) })
    }

    @Test func aFileThatGrowsWhileItIsSentSendsNoMoreThanItsLength() async throws {
        // What is appended while the head waits is a whole request: sent, the server would
        // answer it as the next one on the connection. Far more than the socket buffers between
        // client and server hold: the client is still reading the file when it grows.
        let size = 64 << 20
        let (result, _, _, tail) = try await UploadFileChangeAttackTests.growWhileSent(size: size) { BodyParameters($0) }
        guard case .failure(.transportFailed(let failure)) = result, let mismatch = failure.underlying as? BodyLengthMismatch else {
            Issue.record("expected a BodyLengthMismatch, got \(result)")
            return
        }
        #expect(mismatch == BodyLengthMismatch(statedLength: Int64(size), actualLength: Int64(size) + 1))
        #expect(!String(decoding: tail, as: UTF8.self).contains("/smuggled"))
    }

    @Test func aFileURLThatIsNotAFileURLIsRefusedBeforeAnythingIsRead() async throws {
        // The path exists on disk; the URL still names no local file.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-not-a-file-url-\(UUID().uuidString)")
        try Data("secret".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let remote = try #require(URL(string: "https://example.com" + file.path))
        let api = try TestAPI()
        for parameters: any RequestParameters in [BodyParameters(remote), MultipartParameters(parts: [Part(name: "file", fileURL: remote)])] {
            let error = await apiError(of: api.request(route: api.put(endpoint: "/echo"), parameters: parameters) as Promise<Void>)
            guard case .encodingFailed(let failure)? = error else {
                Issue.record("expected encodingFailed, got \(String(describing: error))")
                continue
            }
            #expect(failure.description.contains("not a file: URL"), "\(failure)")
        }
        let download = await apiError(of: api.download(route: api.get(endpoint: "/echo"), to: remote))
        guard case .fileFailed(let failure)? = download else {
            Issue.record("expected fileFailed, got \(String(describing: download))")
            return
        }
        #expect(failure.reason == .notAFileURL)
    }
}
