import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every encoder, checked byte for byte by what the loopback server received.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct PipelineEncodingTests {
    @Test func urlParametersArriveIntact() async throws {
        let api = try TestAPI()
        let echo = try await api.echo(.get, URLParameters(["q": "a b&c=d+e/é", "page": 2, "tags": ["a", "b"]]), endpoint: "/echo?existing=1")
        #expect(echo.method == "GET")
        #expect(echo.path == "/echo")
        #expect(echo.query == "existing=1&page=2&q=a%20b%26c%3Dd%2Be%2F%C3%A9&tags%5B%5D=a&tags%5B%5D=b")
        #expect(echo.queryItems.contains(["q", "a b&c=d+e/é"]))
        #expect(echo.body.isEmpty)
    }

    @Test func jsonParametersSendExactlyTheEncodersBytes() async throws {
        let api = try TestAPI()
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let product = Product(name: "tern", price: 3)
        let echo = try await api.echo(.post, JSONParameters(product, encoder: encoder, headers: ["X-Trace": "1"]))
        #expect(echo.body == (try encoder.encode(product)))
        #expect(echo.header("Content-Type") == "application/json")
        #expect(echo.header("X-Trace") == "1")
        #expect(echo.header("Content-Length") == String(echo.body.count))
    }

    @Test func formParametersFollowTheQueryRules() async throws {
        let api = try TestAPI()
        let echo = try await api.echo(.post, FormParameters(["user": "ada lovelace", "password": "p&ss=+"]))
        #expect(String(decoding: echo.body, as: UTF8.self) == "password=p%26ss%3D%2B&user=ada%20lovelace")
        #expect(echo.header("Content-Type") == "application/x-www-form-urlencoded; charset=utf-8")
    }

    @Test func dataParametersSendTheBodyAsItIs() async throws {
        let api = try TestAPI()
        let bytes = Data((0..<256).map { UInt8($0) })
        let echo = try await api.echo(.put, BodyParameters(bytes, contentType: "application/x-custom"))
        #expect(echo.method == "PUT")
        #expect(echo.body == bytes)
        #expect(echo.header("Content-Type") == "application/x-custom")
    }

    @Test func theCallersContentTypeWinsOverTheEncoders() async throws {
        let api = try TestAPI()
        let echo = try await api.echo(.post, JSONParameters(["a": 1], headers: ["content-type": "application/vnd.api+json"]))
        #expect(echo.header("Content-Type") == "application/vnd.api+json")
        #expect(echo.headers.filter { $0[0].lowercased() == "content-type" }.count == 1)
    }

    @Test func aCustomEncoderIsAnyRequestParameters() async throws {
        struct Reversed: RequestParameters {
            let text: String
            var headers: HTTPHeaders = ["X-Custom": "yes"]
            func encode(into draft: inout RequestDraft) throws {
                draft.body = .data(Data(String(text.reversed()).utf8))
                draft.headers["Content-Type"] = "text/reversed"
            }
        }
        let api = try TestAPI()
        let echo = try await api.echo(.post, Reversed(text: "tern"))
        #expect(String(decoding: echo.body, as: UTF8.self) == "nret")
        #expect(echo.header("Content-Type") == "text/reversed")
        #expect(echo.header("X-Custom") == "yes")
    }

    @Test func multipartInMemoryIsParsedBackByTheServer() async throws {
        let api = try TestAPI()
        let thumbnail = Data((0..<3000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let parts = [
            Part(name: "caption", value: "front \"quoted\"\r\nline"),
            Part(name: "thumbnail", data: thumbnail, filename: "thumb.png", mimeType: "image/png"),
        ]
        let echo: MultipartEcho = try await api.request(route: api.post(endpoint: "/multipart"), parameters: MultipartParameters(parts: parts)).value
        #expect(echo.contentType.hasPrefix("multipart/form-data; boundary=tern-"))
        #expect(echo.contentLength == String(echo.bodySize))
        #expect(echo.transferEncoding == nil)
        #expect(echo.parts.count == 2)
        #expect(echo.parts[0].name == "caption")
        #expect(echo.parts[0].filename == nil && echo.parts[0].contentType == nil)
        #expect(echo.parts[0].text == "front \"quoted\"\r\nline")
        #expect(echo.parts[1] == .init(name: "thumbnail", filename: "thumb.png", contentType: "image/png", size: 3000, checksum: fnv1a(thumbnail), text: nil))
    }

    /// The default transport, recording which body files it was asked to send.
    struct RecordingTransport: Transport {
        let inner = URLSessionTransport()
        let requests = Recorder<TransportRequest>()
        func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
            requests.append(request)
            return inner.send(request, to: receiver)
        }
    }

    @Test func multipartFilePartsAreStreamedWithAKnownLengthAndCleanedUp() async throws {
        let transport = RecordingTransport()
        let api = try TestAPI(transport: transport)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-test-\(UUID().uuidString).jpg")
        let contents = patterned(bytes: 1 << 20, seed: 7)
        try contents.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }

        let parts = [Part(name: "picture", fileURL: file), Part(name: "caption", value: "back")]
        let echo: MultipartEcho = try await api.request(route: api.patch(endpoint: "/multipart"), parameters: MultipartParameters(parts: parts)).value

        #expect(echo.transferEncoding == nil)
        #expect(echo.contentLength == String(echo.bodySize))
        #expect(echo.parts.map(\.name) == ["picture", "caption"])
        #expect(echo.parts[0].filename == file.lastPathComponent)
        #expect(echo.parts[0].contentType == "image/jpeg")
        #expect(echo.parts[0].size == contents.count)
        #expect(echo.parts[0].checksum == fnv1a(contents))
        #expect(echo.parts[1].text == "back")
        let sent = try #require(transport.requests.items.first)
        #if canImport(FoundationNetworking)
        // No copy of the body on disk: the parts are read as they are sent.
        guard case .stream(let stream) = sent.body else {
            Issue.record("expected a streamed body, got \(sent.body)")
            return
        }
        #expect(stream.length == Int64(echo.bodySize))
        #else
        guard case .file(let file) = sent.body else {
            Issue.record("expected a file body, got \(sent.body)")
            return
        }
        #expect(file.lastPathComponent.hasPrefix("tern-upload-"))
        #expect(!FileManager.default.fileExists(atPath: file.path))
        #endif
    }

    @Test func aMissingFileFailsTheRequestNamingThePart() async throws {
        let api = try TestAPI()
        let missing = URL(fileURLWithPath: "/nonexistent/\(UUID().uuidString).png")
        let promise: Promise<Void> = api.request(route: api.post(endpoint: "/multipart"), parameters: MultipartParameters(parts: [Part(name: "picture", fileURL: missing)]))
        let error = await apiError(of: promise)
        guard case .encodingFailed(let failure)? = error else {
            Issue.record("expected encodingFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.parameter == "picture")
    }

    @Test func everyMethodGoesOutAsNamed() async throws {
        let api = try TestAPI()
        for method in [HTTPMethod.get, .post, .put, .patch, .delete, .options, "PURGE"] {
            #expect(try await api.echo(method).method == method.rawValue)
        }
        let head: Response = try await api.request(route: api.head(endpoint: "/echo")).value
        #expect(head.statusCode == 200)
        #expect(head.body.isEmpty)
    }

    /// A part from `/dev/zero` used to grow its temporary file at 600 MB/s, and a FIFO held a
    /// pipeline thread forever; neither is a file that can be sent.
    @Test func aPartThatIsNotARegularFileIsRefused() async throws {
        let fifo = FileManager.default.temporaryDirectory.appendingPathComponent("tern-fifo-\(UUID().uuidString)")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        defer { try? FileManager.default.removeItem(at: fifo) }
        let api = try TestAPI()
        for path in ["/dev/zero", fifo.path, FileManager.default.temporaryDirectory.path] {
            let part = Part(name: "picture", fileURL: URL(fileURLWithPath: path))
            let error = await apiError(of: api.request(route: api.post(endpoint: "/multipart"), parameters: MultipartParameters(parts: [part])) as Promise<Void>)
            guard case .encodingFailed(let failure)? = error else {
                Issue.record("expected encodingFailed for \(path), got \(String(describing: error))")
                continue
            }
            #expect(failure.parameter == "picture")
            #expect(failure.description.contains("not a regular file"))
        }
    }

    /// The timeout used to start once the body was built: an encoder that took long was
    /// outside it. Now it spans encoding, and the encoder is told when to stop.
    @Test func theTimeoutCoversEncodingAndTheEncoderIsToldToStop() async throws {
        struct Patient: RequestParameters {
            let stopped: Recorder<Bool>
            var headers: HTTPHeaders { [:] }
            func encode(into draft: inout RequestDraft) throws {
                while !draft.isCancelled { Thread.sleep(forTimeInterval: 0.001) }
                stopped.append(true)
                throw APIError.cancelled
            }
        }
        let clock = TestClock()
        let api = try TestAPI(clock: clock)
        let stopped = Recorder<Bool>()
        let promise: Promise<Data> = api.request(route: api.post(endpoint: "/echo"), parameters: Patient(stopped: stopped),
                                                 options: RequestOptions(timeout: 5))
        #expect(await clock.waitForScheduled(1))
        clock.advance(by: 5)
        #expect(await apiError(of: promise)?.caseName == "timeout")
        #expect(await eventually { stopped.items == [true] })
    }

    /// A new sparse file of `bytes` zeros: it costs no disk until it is copied.
    private func sparseFile(bytes: UInt64) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-sparse-\(UUID().uuidString).bin")
        #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: bytes)
        try handle.close()
        return file
    }

    #if canImport(FoundationNetworking)
    /// A 16 GiB file part starts going out at once, with no copy of it on disk, and a cancel
    /// stops the upload and closes its connection. The cancel comes from the progress queue as
    /// soon as 4 MiB are out: at 2 GiB loopback sent it all in two seconds, and cancelling from
    /// the test's task, which a loaded machine can leave asleep for seconds, left the upload to
    /// run unattended.
    @Test func aHugeFilePartIsSentWithoutACopyAndStopsWhenCancelled() async throws {
        let big = try sparseFile(bytes: 16 << 30)
        defer { try? FileManager.default.removeItem(at: big) }
        let server = try LoopbackServer(keepingBodiesUpTo: 0) { _ in .json("{}") }
        defer { server.stop() }
        let before = Set(try FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory()))
        let api = try TestAPI(baseURL: server.baseURL)
        let sent = Recorder<TransferProgress>()
        let copies = Recorder<String>()
        let promise: Promise<Void> = api.request(route: api.post(endpoint: "/upload"), parameters: MultipartParameters(parts: [Part(name: "big", fileURL: big)]),
                                                 options: RequestOptions(timeout: 600))
        promise.onProgress(in: DispatchQueue(label: "progress")) { progress in
            sent.append(progress)
            guard progress.completedBytes > 4 << 20, copies.items.isEmpty else { return }
            let added = (try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory()))?.filter { !before.contains($0) } ?? []
            copies.append(added.filter { $0.hasPrefix("tern-upload-") }.joined(separator: " "))
            promise.cancel()
        }
        #expect(await apiError(of: promise)?.caseName == "cancelled")
        #expect(copies.items == [""], "no copy of the body, and the upload under way when cancelled")
        #expect(sent.items.first?.totalBytes ?? 0 > 16 << 30, "the length is known from the start")
        #expect(await eventuallyClosed(server))
    }
    #else
    /// Cancelling a request whose multipart body is being written stops the copy within a chunk
    /// and deletes the file; it used to go on to the end.
    @Test func cancellingWhileAMultipartBodyIsWrittenStopsTheCopy() async throws {
        let big = try sparseFile(bytes: 2 << 30)
        defer { try? FileManager.default.removeItem(at: big) }
        let before = Set(try FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory()))
        let api = try TestAPI()
        let promise: Promise<Void> = api.request(route: api.post(endpoint: "/multipart"), parameters: MultipartParameters(parts: [Part(name: "big", fileURL: big)]))
        @Sendable func uploads() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? [])
                .filter { $0.hasPrefix("tern-upload-") && !before.contains($0) }
        }
        @Sendable func written() -> UInt64 {
            uploads().map { name in
                (try? FileManager.default.attributesOfItem(atPath: NSTemporaryDirectory() + "/" + name)[.size] as? NSNumber)??.uint64Value ?? 0
            }.max() ?? 0
        }
        #expect(await eventually { !uploads().isEmpty })
        let atCancel = written()
        promise.cancel()
        #expect(await apiError(of: promise)?.caseName == "cancelled")
        let sizes = Recorder<UInt64>()
        let gone = await eventually {
            sizes.append(written())
            return uploads().isEmpty
        }
        #expect(gone)
        let largest = sizes.items.max() ?? 0
        #expect(largest < atCancel + (256 << 20), "the copy went on from \(atCancel) to \(largest) bytes after the cancel")
    }
    #endif
}
