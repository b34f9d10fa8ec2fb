import Foundation
import Testing
import Tern
@testable import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a request can be, recorded and replayed: redirect hops, a retry after a lost
/// connection, a stream at its recorded pace on a test clock or at once, a stream the client
/// left open; record-if-missing; a recording that cannot be written.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordedExchangeKindsTests {
    func entries(_ file: URL) throws -> [[String: Any]] { try recordedEntries(in: file) }

    /// Tern follows redirects itself, so each hop is an exchange of its own; a request that
    /// failed without a response is kept as its `URLError`, and its retry replays after it.
    @Test func redirectHopsAndARetryAfterALostConnectionReplay() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let hits = Recorder<String>()
        let server = try LoopbackServer { request in
            hits.append(request.path)
            switch request.path {
            case "/old": return ServerResponse(status: 302, headers: ["Location": "/new"])
            case "/new": return .json(#"{"name": "tern", "price": 3}"#)
            default: return hits.items.filter { $0 == "/flaky" }.count == 1 ? ServerResponse().with(.hangUp) : .json(#"{"name": "auk", "price": 1}"#)
            }
        }
        let baseURL = server.baseURL
        let configuration = APIConfiguration(retryPolicy: RetryPolicy(baseDelay: 0.001, jitter: false))
        let recording = try TestAPI(baseURL: baseURL, configuration: configuration,
                                    transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()))
        // The lost connection first, on a new one: libcurl sends a request again by itself when a
        // connection it reused turns out dead.
        let retried: Product = try await recording.request(route: recording.get(endpoint: "/flaky")).value
        let moved: Product = try await recording.request(route: recording.get(endpoint: "/old")).value
        server.stop()
        #expect(hits.items == ["/flaky", "/flaky", "/old", "/new"])
        let kept = try entries(file)
        #expect(kept.count == 4)
        #expect(kept.contains { ($0["_transportError"] as? Int) != nil }, "the lost connection is kept")

        let replaying = try TestAPI(baseURL: baseURL, configuration: configuration, transport: RecordingTransport(file: file, mode: .replay))
        let retriedAgain: Product = try await replaying.request(route: replaying.get(endpoint: "/flaky")).value
        let movedAgain: Product = try await replaying.request(route: replaying.get(endpoint: "/old")).value
        #expect(movedAgain == moved && moved == Product(name: "tern", price: 3))
        #expect(retriedAgain == retried && retried == Product(name: "auk", price: 1))
    }

    /// Answers of one URL that vary by a request header (`Vary: Accept-Language`), recorded
    /// English then French, replay each to its own language whatever the order asked, and
    /// again. (Taken in the recorded order, French got "Hello" and English "Bonjour".)
    @Test func answersRecordedForTheHeadersTheyVaryByReplayToThose() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let server = try LoopbackServer { request in
            let french = request.headers["Accept-Language"] == "fr"
            return ServerResponse(headers: ["Content-Type": "text/plain", "Vary": "Accept-Encoding, Accept-Language"],
                                  body: Data((french ? "Bonjour" : "Hello").utf8))
        }
        let baseURL = server.baseURL
        func greeting(_ api: TestAPI, _ language: String) async throws -> String {
            try await api.request(route: api.get(endpoint: "/greeting"), options: RequestOptions(headers: ["Accept-Language": language])).value
        }
        let recording = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()))
        #expect(try await greeting(recording, "en") == "Hello")
        #expect(try await greeting(recording, "fr") == "Bonjour")
        server.stop()

        let replaying = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .replay))
        for language in ["fr", "en", "fr", "en"] {
            #expect(try await greeting(replaying, language) == (language == "fr" ? "Bonjour" : "Hello"), "\(language)")
        }
    }

    /// Events recorded one a second on a test clock replay one a second on another, and at
    /// once on none.
    @Test func aStreamReplaysAtItsRecordedPaceOnATestClockAndAtOnceWithout() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let configuration = APIConfiguration(timeout: .infinity, retryPolicy: .never)
        let sent = [ServerSentEvent(data: "A tern"), ServerSentEvent(data: "is"), ServerSentEvent(type: "done", data: "a bird")]
        let recordingClock = TestClock()
        let stubs = StubTransport(clock: recordingClock)
        stubs.add(Stub(.get, "/completions", answers: .events(sent.map { (after: 1, event: $0) })))
        let recording = try TestAPI(baseURL: "https://stream.example", configuration: configuration,
                                    transport: RecordingTransport(file: file, mode: .record, upstream: stubs, clock: recordingClock))
        let recordingTask = Task.onTestThreads { () -> [ServerSentEvent] in
            var events: [ServerSentEvent] = []
            for try await event in recording.stream(route: recording.get(endpoint: "/completions")).events { events.append(event) }
            return events
        }
        for _ in sent {
            #expect(await recordingClock.waitForScheduled(1))
            recordingClock.advance(by: 1)
        }
        #expect(try await outcome(of: recordingTask).get() == sent)
        #expect((try entries(file).first?["_chunks"] as? [[String: Any]])?.compactMap { $0["after"] as? Double } == [1, 1, 1])

        let clock = TestClock()
        let paced = try TestAPI(baseURL: "https://stream.example", configuration: configuration,
                                transport: RecordingTransport(file: file, mode: .replay, clock: clock))
        let seen = Recorder<ServerSentEvent>()
        let reading = Task.onTestThreads {
            for try await event in paced.stream(route: paced.get(endpoint: "/completions")).events { seen.append(event) }
        }
        for count in 1...3 {
            #expect(await clock.waitForScheduled(1))
            #expect(seen.items.count == count - 1)
            clock.advance(by: 1)
            #expect(await eventually { seen.items.count == count })
        }
        try await outcome(of: reading).get()
        #expect(seen.items == sent)

        let atOnce = try TestAPI(baseURL: "https://stream.example", configuration: configuration,
                                 transport: RecordingTransport(file: file, mode: .replay))
        var events: [ServerSentEvent] = []
        for try await event in atOnce.stream(route: atOnce.get(endpoint: "/completions")).events { events.append(event) }
        #expect(events == sent)
    }

    /// A pause shorter than a twentieth of a second is recorded as none: the first chunk, read
    /// a moment after the head, replays with it on a test clock, which the test moves only for
    /// the server's real pauses. (Kept to the millisecond, such a chunk held the replay until the
    /// clock moved, in some recordings and not others.)
    @Test func aPauseOfTheNetworksIsNotRecorded() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let configuration = APIConfiguration(timeout: .infinity, retryPolicy: .never)
        let recordingClock = TestClock()
        let stubs = StubTransport(clock: recordingClock)
        stubs.add(Stub(.get, "/ticks", answers: .streamed([(after: 0.02, "first\n"), (after: 0.03, "soon\n"), (after: 1.04, "later\n")])))
        let recording = try TestAPI(baseURL: "https://stream.example", configuration: configuration,
                                    transport: RecordingTransport(file: file, mode: .record, upstream: stubs, clock: recordingClock))
        let recordingTask = Task.onTestThreads { () -> [String] in
            var lines: [String] = []
            for try await line in recording.stream(route: recording.get(endpoint: "/ticks")).lines { lines.append(line) }
            return lines
        }
        for step in [0.02, 0.03, 1.04] {
            #expect(await recordingClock.waitForScheduled(1))
            recordingClock.advance(by: step)
        }
        #expect(try await outcome(of: recordingTask).get() == ["first", "soon", "later"])
        #expect((try entries(file).first?["_chunks"] as? [[String: Any]])?.compactMap { $0["after"] as? Double } == [0, 1])

        let clock = TestClock()
        let paced = try TestAPI(baseURL: "https://stream.example", configuration: configuration,
                                transport: RecordingTransport(file: file, mode: .replay, clock: clock))
        let seen = Recorder<String>()
        let reading = Task.onTestThreads {
            for try await line in paced.stream(route: paced.get(endpoint: "/ticks")).lines { seen.append(line) }
        }
        // The first two lines come with the head, the clock unmoved.
        #expect(await eventually { seen.items == ["first", "soon"] })
        #expect(await clock.waitForScheduled(1))
        clock.advance(by: 1)
        try await outcome(of: reading).get()
        #expect(seen.items == ["first", "soon", "later"])
    }

    /// A stream the client stopped reading is kept open: replayed, it gives what came, then
    /// waits as the server did, until cancelled.
    @Test func aStreamTheClientLeftIsReplayedOpen() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let configuration = APIConfiguration(timeout: .infinity, retryPolicy: .never)
        let stubs = StubTransport(clock: TestClock())
        stubs.add(Stub(.get, "/ticks", answers: .streamed([(after: 0, "first\n"), (after: 100, "never\n")])))
        let recording = try TestAPI(baseURL: "https://stream.example", configuration: configuration,
                                    transport: RecordingTransport(file: file, mode: .record, upstream: stubs))
        for try await line in recording.stream(route: recording.get(endpoint: "/ticks")).lines {
            #expect(line == "first")
            break
        }
        #expect(await eventually { (try? entries(file).first?["_open"] as? Bool) == true })

        let replaying = try TestAPI(baseURL: "https://stream.example", configuration: configuration,
                                    transport: RecordingTransport(file: file, mode: .replay))
        let stream = replaying.stream(route: replaying.get(endpoint: "/ticks"))
        let lines = Recorder<String>()
        let reading = Task.onTestThreads {
            for try await line in stream.lines { lines.append(line) }
        }
        #expect(await eventually { lines.items == ["first"] })
        reading.cancel()
        _ = await outcome(of: reading)
        #expect(lines.items == ["first"])
    }

    /// A stream from a real server, left after its first event, replays at once in the same
    /// run: the replaying transport waits for the exchanges this process is recording into the
    /// file (the stream's transfer stops, and its entry is written, a moment after the loop
    /// ends; before, a test had to wait for its `didEndStream`, or found nothing to replay).
    @Test func aStreamJustLeftReplaysInTheSameRunWithNoWait() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let first = "data: first\n\n"
        let server = try LoopbackServer { _ in
            ServerResponse(headers: ["Content-Type": "text/event-stream"], body: Data((first + "data: never\n\n").utf8))
                .with(.stalled(afterBytes: first.utf8.count, seconds: 30))
        }
        let configuration = APIConfiguration(timeout: 60, retryPolicy: .never)
        for round in 0..<5 {
            let recording = try TestAPI(baseURL: server.baseURL, configuration: configuration,
                                        transport: RecordingTransport(file: file, mode: round == 0 ? .record : .missing))
            for try await event in recording.stream(route: recording.get(endpoint: "/events/\(round)")).events {
                #expect(event.data == "first")
                break
            }
            let replaying = try TestAPI(baseURL: server.baseURL, configuration: configuration,
                                        transport: RecordingTransport(file: file, mode: .replay))
            let replayed = Task.onTestThreads { () -> String? in
                for try await event in replaying.stream(route: replaying.get(endpoint: "/events/\(round)")).events { return event.data }
                return nil
            }
            #expect(try await replayed.value == "first")
        }
    }

    /// A compressed body is kept decoded, as text, its `Content-Encoding` beside it, and
    /// replays decoded.
    @Test func aCompressedBodyIsKeptDecodedAndReplays() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let json = #"[{"name": "tern", "price": 3}, {"name": "tern", "price": 3}, {"name": "tern", "price": 3}]"#
        let server = try LoopbackServer { _ in
            ServerResponse(headers: ["Content-Type": "application/json", "Content-Encoding": "gzip"], body: GzipStream.compressed(Data(json.utf8)))
        }
        let baseURL = server.baseURL
        let recording = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()))
        let recorded: [Product] = try await recording.request(route: recording.get(endpoint: "/products")).value
        server.stop()
        let response = try #require(try entries(file).first?["response"] as? [String: Any])
        #expect((response["content"] as? [String: Any])?["text"] as? String == json)
        #expect((response["headers"] as? [[String: String]])?.contains { $0["name"]?.lowercased() == "content-encoding" } == true)

        let replaying = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .replay))
        let replayed: [Product] = try await replaying.request(route: replaying.get(endpoint: "/products")).value
        #expect(replayed == recorded && recorded.count == 3)
    }

    /// A header named secret is hidden, and its placeholder matches any value when the header
    /// is matched.
    @Test func aSecretHeaderIsHiddenAndItsPlaceholderMatchesAnyValue() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let key = "key-\(UUID().uuidString)"
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/products", headers: ["X-Api-Key": key], answers: .json("[]")))
        let options = RecordingOptions(matchedHeaders: ["X-Api-Key", "X-Shop"], secrets: ["x-api-key"])
        let recording = try TestAPI(baseURL: "https://shop.example", transport: RecordingTransport(file: file, mode: .record, upstream: stubs, options: options))
        let recorded: [Product] = try await recording.request(route: recording.get(endpoint: "/products"),
                                                              parameters: URLParameters([:], headers: ["X-Api-Key": key, "X-Shop": "north"])).value
        #expect(recorded.isEmpty)
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(!text.contains(key) && text.contains("[redacted]"))

        let replaying = try TestAPI(baseURL: "https://shop.example", transport: RecordingTransport(file: file, mode: .replay, options: options))
        let replayed: [Product] = try await replaying.request(route: replaying.get(endpoint: "/products"),
                                                              parameters: URLParameters([:], headers: ["X-Api-Key": "another", "X-Shop": "north"])).value
        #expect(replayed.isEmpty)
        let error = await apiError(of: replaying.request(route: replaying.get(endpoint: "/products"),
                                                         parameters: URLParameters([:], headers: ["X-Api-Key": "another", "X-Shop": "south"])) as Promise<[Product]>)
        guard case .transportFailed(let failure)? = error, let unmatched = failure.underlying as? UnmatchedRequest else {
            Issue.record("expected an unmatched request, got \(String(describing: error))")
            return
        }
        #expect(unmatched.mismatches.first?.reason == "header X-Shop is south, not north")
    }

    /// A binary download is kept as Base64 and replays into a file byte for byte; a file
    /// uploaded, over 64 KiB, is kept by its digest, which the body must match on replay.
    @Test func aDownloadAndALargeFileUploadReplay() async throws {
        let file = scratchRecording()
        let folder = file.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: folder) }
        let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) })
        let upload = try folder.appendingPathComponent("upload.bin").creatingDirectory()
        try bytes.write(to: upload)
        let server = try LoopbackServer(keepingBodiesUpTo: 1 << 20) { request in
            request.method == "PUT" ? .json(#"{"bytes": \#(request.bodyLength)}"#)
                : ServerResponse(headers: ["Content-Type": "application/octet-stream"], body: bytes)
        }
        let baseURL = server.baseURL
        let options = RecordingOptions(matchesBody: true)
        let recording = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .record, upstream: TestTransport.make(), options: options))
        _ = try await recording.download(route: recording.get(endpoint: "/photo"), to: folder.appendingPathComponent("recorded.bin")).value
        let sent: Data = try await recording.request(route: recording.route(.put, endpoint: "/photo"), parameters: BodyParameters(upload)).value
        server.stop()
        let kept = try entries(file)
        let download = try #require(kept.first { ($0["request"] as? [String: Any])?["method"] as? String == "GET" })
        #expect(((download["response"] as? [String: Any])?["content"] as? [String: Any])?["encoding"] as? String == "base64")
        let put = try #require(kept.first { ($0["request"] as? [String: Any])?["method"] as? String == "PUT" })
        let postData = try #require((put["request"] as? [String: Any])?["postData"] as? [String: Any])
        #expect(postData["_size"] as? Int == bytes.count && postData["text"] == nil && (postData["_sha256"] as? String)?.count == 64)

        let replaying = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .replay, options: options))
        let replayed = folder.appendingPathComponent("replayed.bin")
        _ = try await replaying.download(route: replaying.get(endpoint: "/photo"), to: replayed).value
        #expect(try Data(contentsOf: replayed) == bytes)
        let again: Data = try await replaying.request(route: replaying.route(.put, endpoint: "/photo"), parameters: BodyParameters(upload)).value
        #expect(again == sent)
        try (bytes.dropLast() + Data([0])).write(to: upload)   // one byte changed: another body
        await #expect(throws: APIError.self) {
            let _: Data = try await replaying.request(route: replaying.route(.put, endpoint: "/photo"), parameters: BodyParameters(upload)).value
        }
    }

    /// `missing` replays what the file has and records what it has not.
    @Test func recordIfMissingReplaysWhatIsThereAndRecordsTheRest() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let hits = Recorder<String>()
        let server = try LoopbackServer { request in
            hits.append(request.path)
            return .json(#"{"name": "\#(request.path.dropFirst())", "price": 1}"#)
        }
        let baseURL = server.baseURL
        defer { server.stop() }
        try Data(RecordingTransportTests.archive(entries: [
            RecordingTransportTests.entry("GET", baseURL + "/kept", body: #"{"name": "from the file", "price": 0}"#),
        ]).utf8).write(to: file.creatingDirectory())
        let api = try TestAPI(baseURL: baseURL, transport: RecordingTransport(file: file, mode: .missing, upstream: TestTransport.make()))
        let kept: Product = try await api.request(route: api.get(endpoint: "/kept")).value
        let new: Product = try await api.request(route: api.get(endpoint: "/new")).value
        #expect(kept == Product(name: "from the file", price: 0))
        #expect(new == Product(name: "new", price: 1))
        #expect(hits.items == ["/new"])
        #expect(try entries(file).compactMap { ($0["request"] as? [String: Any])?["url"] as? String } == [baseURL + "/kept", baseURL + "/new"])
    }

    /// The digest large bodies are kept by is SHA-256: FIPS 180-4's test vectors.
    @Test func theDigestIsSHA256() {
        #expect(SHA256Digest.hex(Data("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256Digest.hex(Data()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256Digest.hex(Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(SHA256Digest.hex(Data(repeating: 0x61, count: 1_000_000)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// `TERN_RECORDING` chooses when the code does not; a value it does not know means replay.
    @Test func theEnvironmentChoosesTheModeAndAnUnknownOneReplays() throws {
        #expect(RecordingTransport.environmentMode(nil) == .missing)
        #expect(RecordingTransport.environmentMode("") == .missing)
        #expect(RecordingTransport.environmentMode("record") == .record)
        #expect(RecordingTransport.environmentMode("REPLAY") == .replay)
        #expect(RecordingTransport.environmentMode("missing") == .missing)
        #expect(RecordingTransport.environmentMode("replya") == .replay)
        // Odd spellings: only an exact name (in any case) reaches the network.
        for odd in [" record", "record\n", "record,missing", "1", "true", "rec", "r\u{0}ecord"] {
            #expect(RecordingTransport.environmentMode(odd) == .replay, "\(odd.debugDescription)")
        }
        #expect(RecordingTransport.environmentMode("Record") == .record)
        let file = scratchRecording()
        #expect(try RecordingTransport(file: file).mode == RecordingTransport.environmentMode(ProcessInfo.processInfo.environment["TERN_RECORDING"]))
        #expect(try RecordingTransport(file: file, mode: .record).mode == .record, "the code's mode wins")
    }

    /// A recording that cannot be written fails the request that went well, naming why.
    @Test func aRecordingThatCannotBeWrittenFailsTheRequest() async throws {
        let blocker = scratchRecording("blocker")
        defer { try? FileManager.default.removeItem(at: blocker.deletingLastPathComponent()) }
        try Data().write(to: blocker.creatingDirectory())   // a file where the recording's directory should be
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/products", answers: .json("[]")))
        let api = try TestAPI(baseURL: "https://shop.example",
                              transport: RecordingTransport(file: blocker.appendingPathComponent("session.har"), mode: .record, upstream: stubs))
        let error = await apiError(of: api.request(route: api.get(endpoint: "/products")) as Promise<[Product]>)
        #expect(error?.caseName == "transportFailed")
    }
}
