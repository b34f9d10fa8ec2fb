import Dispatch
import Foundation
import Testing
@testable import Tern
@testable import TernCore
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Responses read as they arrive, against a raw socket server, over the transport under test.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct StreamTests {
    /// One chunk of a chunked body.
    static func chunk(_ text: String) -> String { chunk(Array(text.utf8)) }
    static func chunk(_ bytes: [UInt8]) -> String { String(bytes.count, radix: 16) + "\r\n" + String(decoding: bytes, as: UTF8.self) + "\r\n" }

    static let chunkedHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

    /// An API over the transport under test; with a plugin if `judgedByAppCode`, so that a
    /// stream's head is judged off the transport's thread, the body waiting meanwhile (or, where
    /// the transport cannot pause, kept and handed on after).
    func api(judgedByAppCode: Bool = false) -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, plugins: judgedByAppCode ? [Watching()] : []),
                    transport: TestTransport.make(), responseQueue: .global())
    }

    /// A plugin that does nothing: app code, as far as the pipeline knows.
    struct Watching: Plugin { func observe(_ event: PluginEvent, api: APIContext) {} }

    @Test(arguments: [false, true])
    func eventsArriveAsTheServerSendsThemWithEveryFieldAndLineEnd(judgedByAppCode: Bool) async throws {
        let stream = "\u{FEFF}: a comment\r\nevent: delta\r\nid: 1\r\ndata: first\r\ndata: line\r\n\r\nretry: 2000\ndata: second\n\ndata: third\r\r"
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send(Self.chunkedHead)
            // Written a few bytes at a time, as a model emitting tokens might.
            let bytes = Array(stream.utf8)
            for start in stride(from: 0, to: bytes.count, by: 3) {
                _ = connection.send(Self.chunk(Array(bytes[start..<min(start + 3, bytes.count)])))
                connection.pause(1)
            }
            _ = connection.send("0\r\n\r\n")
        }
        defer { server.stop() }
        var events: [ServerSentEvent] = []
        for try await event in api(judgedByAppCode: judgedByAppCode).stream(route: .get(server.baseURL + "/events")).events { events.append(event) }
        #expect(events == [
            ServerSentEvent(type: "delta", data: "first\nline", lastEventID: "1"),
            ServerSentEvent(data: "second", lastEventID: "1"),
            ServerSentEvent(data: "third", lastEventID: "1"),
        ])
    }

    /// Data lines, each short, and never the blank line that would end their event: the stream
    /// ends at the event's limit with a typed error, and the server sees its connection closed.
    @Test func anEventThatNeverEndsEndsTheStreamAtItsLimit() async throws {
        let closed = Recorder<Bool>()
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send(Self.chunkedHead + Self.chunk("data: first\n\n"))
            // 4 MiB of data lines, then the connection held open until the client closes it.
            let lines = Self.chunk(String(repeating: "data: \(String(repeating: "x", count: 1000))\n", count: 64))
            for _ in 0..<64 { guard connection.send(lines) else { break } }
            _ = connection.readRequest()
            closed.append(true)
        }
        defer { server.stop() }
        var events: [ServerSentEvent] = []
        do {
            for try await event in api().stream(route: .get(server.baseURL + "/events")).events(maximumEventLength: 1 << 20) {
                events.append(event)
            }
            Issue.record("the stream ended without an error")
        } catch APIError.responseTooLarge(let failure) {
            #expect(failure.limit == 1 << 20)
        }
        #expect(events == [ServerSentEvent(data: "first")])
        #expect(await eventually { !closed.items.isEmpty })
    }

    /// The first line is read while the server still holds the rest: nothing waits for the end.
    @Test(arguments: [false, true])
    func aLineArrivesBeforeTheBodyEnds(judgedByAppCode: Bool) async throws {
        let firstRead = DispatchSemaphore(value: 0)
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + Self.chunk("one\ntw"))
            // Long: over URLSession under the sanitizer, FoundationNetworking's one work queue,
            // busy with the rest of the suite, delivered the first line after 20 s once.
            guard firstRead.wait(timeout: .now() + 50) == .success else { return }
            _ = connection.send(Self.chunk("o\r\nthree") + "0\r\n\r\n")
        }
        defer { server.stop() }
        var lines: [String] = []
        for try await line in api(judgedByAppCode: judgedByAppCode).stream(route: .get(server.baseURL + "/lines")).lines {
            lines.append(line)
            if lines.count == 1 { firstRead.signal() }
        }
        #expect(lines == ["one", "two", "three"])
    }

    @Test(arguments: [false, true])
    func anErrorStatusFailsWithItsBodyNotAStream(judgedByAppCode: Bool) async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send(RawServer.Connection.response(#"{"error":"no such feed"}"#, status: "404 Not Found"))
        }
        defer { server.stop() }
        do {
            for try await _ in api(judgedByAppCode: judgedByAppCode).stream(route: .get(server.baseURL + "/missing")) { Issue.record("a chunk of an error's body") }
            Issue.record("no error")
        } catch let error as APIError {
            guard case .unacceptableStatus(let failure) = error else { Issue.record("expected unacceptableStatus, got \(error)"); return }
            #expect(failure.statusCode == 404)
            #expect(String(decoding: failure.body, as: UTF8.self) == #"{"error":"no such feed"}"#)
        }
    }

    @Test func aRedirectIsFollowedBeforeTheStreamOpens() async throws {
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                if request.hasPrefix("GET /old ") {
                    _ = connection.send("HTTP/1.1 302 Found\r\nLocation: /new\r\nContent-Length: 0\r\n\r\n")
                } else {
                    _ = connection.send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + Self.chunk("moved\n") + "0\r\n\r\n")
                }
            }
        }
        defer { server.stop() }
        let stream = api().stream(route: .get(server.baseURL + "/old"))
        var lines: [String] = []
        for try await line in stream.lines { lines.append(line) }
        #expect(lines == ["moved"])
        #expect(try await stream.response.value.url?.path == "/new")
    }

    /// A 401 refreshes the credentials once and the request goes again, all before the stream
    /// opens on the accepted answer.
    @Test func aRefusedTokenIsRefreshedBeforeTheStreamOpens() async throws {
        let server = try AuthServer()
        let api = AuthAPI(server)
        let store = SessionStore(server)
        api.delegate = store
        var lines: [String] = []
        for try await line in api.stream(route: .get(server.baseURL + "/secure/feed")).lines { lines.append(line) }
        #expect(lines == [#"{"ok": true}"#])
        #expect(server.refreshCount == 1)
        #expect(server.tokens.last == "t1")
    }

    struct Reading: Decodable, Equatable {
        let id: Int
        let value: Double
    }

    @Test func ndjsonDecodesLineByLineAndABadLineIsNamed() async throws {
        let body = "{\"id\":1,\"value\":0.5}\n\n{\"id\":2,\"value\":1.5}\r\n{\"id\":\"three\"}\n{\"id\":4,\"value\":2}\n"
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send("HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n")
            for piece in body.split(separator: "}", omittingEmptySubsequences: false) { _ = connection.send(Self.chunk(String(piece) + "}")) }
            _ = connection.send("0\r\n\r\n")
        }
        defer { server.stop() }
        var readings: [Reading] = []
        do {
            for try await reading in api().stream(route: .get(server.baseURL + "/readings")).values(of: Reading.self) { readings.append(reading) }
            Issue.record("no error")
        } catch let error as APIError {
            guard case .parsingFailed(let failure) = error else { Issue.record("expected parsingFailed, got \(error)"); return }
            #expect(failure.codingPath.hasPrefix("line 4"), "\(failure.codingPath)")
        }
        #expect(readings == [Reading(id: 1, value: 0.5), Reading(id: 2, value: 1.5)])
    }

    /// Without `async`: a callback per line on a queue, a promise for the end, a cancel that
    /// stops the transfer.
    @Test func callbacksGetEachLineInOrderAndThePromiseTheEnd() async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + Self.chunk("a\nb") + Self.chunk("\nc\n") + "0\r\n\r\n")
        }
        defer { server.stop() }
        let queue = DispatchQueue(label: "lines")
        let lines = Recorder<String>()
        let done = api().stream(route: .get(server.baseURL + "/lines")).lines.forEach(on: queue) { line in
            dispatchPrecondition(condition: .onQueue(queue))
            lines.append(line)
        }
        try await done.value
        #expect(lines.items == ["a", "b", "c"])

        let closed = Recorder<Bool>()
        let ticking = try Self.ticking(closed: closed)
        defer { ticking.stop() }
        let ticks = Recorder<String>()
        let endless = api().stream(route: .get(ticking.baseURL + "/ticks")).lines.forEach(on: queue) { ticks.append($0) }
        #expect(await eventually { ticks.items.count >= 2 })
        endless.cancel()
        #expect(await eventually { !closed.items.isEmpty })
    }

    /// A server sending a line every 5 ms until its connection closes, then noting it in `closed`.
    static func ticking(closed: Recorder<Bool>) throws -> RawServer {
        try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            while connection.send(chunk("tick\n")) { connection.pause(5) }
            closed.append(true)
        }
    }

    /// Leaving the loop stops the transfer: the server sees its connection closed.
    @Test func leavingTheLoopClosesTheConnection() async throws {
        let closed = Recorder<Bool>()
        let server = try Self.ticking(closed: closed)
        defer { server.stop() }
        for try await line in api().stream(route: .get(server.baseURL + "/ticks")).lines {
            #expect(line == "tick")
            break
        }
        #expect(await eventually { !closed.items.isEmpty })
    }

    /// A stream whose head was read and that was then let go, never iterated (nobody can read
    /// its body any more), stops its transfer: the server sees its connection closed, where an
    /// endless body would otherwise hold a connection, and the server's work, for ever. Its
    /// head, read from the stream made in the same expression, is not cancelled.
    @Test func aStreamLetGoAfterItsHeadClosesTheConnection() async throws {
        let closed = Recorder<Bool>()
        let server = try Self.ticking(closed: closed)
        defer { server.stop() }
        let api = api()
        do {
            let stream = api.stream(route: .get(server.baseURL + "/ticks"))
            #expect(try await stream.response.value.statusCode == 200)
        }
        #expect(await eventually(timeout: 30) { !closed.items.isEmpty })
        let head = try await api.stream(route: .get(server.baseURL + "/ticks")).response.value
        #expect(head.statusCode == 200)
        #expect(await eventually(timeout: 30) { closed.items.count == 2 })
    }

    @Test func cancellingTheReadingTaskClosesTheConnection() async throws {
        let closed = Recorder<Bool>()
        let server = try Self.ticking(closed: closed)
        defer { server.stop() }
        let stream = api().stream(route: .get(server.baseURL + "/ticks"))
        let read = Locked(0)
        let reading = Task.onTestThreads {
            for try await _ in stream.lines { read.withLock { $0 += 1 } }
        }
        #expect(await eventually { read.withLock { $0 } >= 2 })
        await Self.cancel(reading, expectingClosed: closed)
    }

    /// Cancels `reading`, which ends with `APIError.cancelled`, and the server sees its
    /// connection closed.
    static func cancel(_ reading: Task<Void, any Error>, expectingClosed closed: Recorder<Bool>,
                       sourceLocation: SourceLocation = #_sourceLocation) async {
        reading.cancel()
        let ended = await outcome(of: reading)
        guard case .failure(let error) = ended, case .cancelled? = error as? APIError else {
            Issue.record("expected APIError.cancelled, got \(ended)", sourceLocation: sourceLocation)
            return
        }
        #expect(await eventually { !closed.items.isEmpty }, sourceLocation: sourceLocation)
    }

    /// Cancelled while a plugin still judges its head: the request settles once, cancelled,
    /// and the connection goes; the plugin's late word changes nothing.
    @Test func aStreamCancelledWhileItsHeadIsJudgedEndsCancelled() async throws {
        struct Slow: Plugin {
            let judging: DispatchSemaphore
            func observe(_ event: PluginEvent, api: APIContext) {
                guard case .didReceive = event else { return }
                judging.signal()
                Thread.sleep(forTimeInterval: 0.3)
            }
        }
        let closed = Recorder<Bool>()
        let server = try Self.ticking(closed: closed)
        defer { server.stop() }
        let judging = DispatchSemaphore(value: 0)
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, plugins: [Slow(judging: judging)]),
                              transport: TestTransport.make(), responseQueue: .global())
        let stream = api.stream(route: .get(server.baseURL + "/ticks"))
        let reading = Task.onTestThreads {
            for try await _ in stream.lines {}
        }
        #expect(await Task.onTestThreads { judging.wait(timeout: .now() + 10) }.value == .success)
        await Self.cancel(reading, expectingClosed: closed)
    }

    /// A reader slower than the server holds it back: what leaves the server while
    /// the reader waits is the buffer's megabyte and what the sockets hold, not the body.
    @Test(.enabled(if: TestTransport.pauses, "FoundationNetworking has no pause"), arguments: [false, true])
    func aSlowReaderHoldsTheServerBack(judgedByAppCode: Bool) async throws {
        let size = 48 << 20
        let sent = Locked(0)
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            guard connection.send("HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\n\r\n") else { return }
            let piece = [UInt8](repeating: 0x61, count: 65_536)
            while sent.withLock({ $0 }) < size, connection.send(piece) { sent.withLock { $0 += piece.count } }
        }
        defer { server.stop() }
        var received = 0
        var heldBack = 0
        for try await chunk in api(judgedByAppCode: judgedByAppCode).stream(route: .get(server.baseURL + "/large"), options: RequestOptions(streamBufferSize: 1 << 20)) {
            received += chunk.count
            if heldBack == 0, received >= 1 << 20 {
                try await Task.sleep(for: .milliseconds(300))   // a slow reader
                heldBack = sent.withLock { $0 }
            }
        }
        #expect(received == size)
        #expect(heldBack < 16 << 20, "\(heldBack) bytes left the server while the reader waited")
    }

    /// A server that sends `size` bytes of body, as fast as its reader takes them.
    static func serving(_ size: Int) throws -> RawServer {
        try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            guard connection.send("HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\n\r\n") else { return }
            let piece = [UInt8](repeating: 0x61, count: 65_536)
            for _ in 0..<(size / piece.count) { guard connection.send(piece) else { return } }
        }
    }

    /// A reader a little slower than the server, for many times the buffer's size: what the
    /// stream holds stays near `bufferSize`. Paused at capacity and resumed at half, the buffer
    /// never emptied, and kept every chunk the reader had taken.
    @Test(.enabled(if: TestTransport.pauses, "FoundationNetworking has no pause"))
    func aLaggingReaderKeepsTheStreamNearItsBufferSize() async throws {
        let size = 16 << 20
        let server = try Self.serving(size)
        defer { server.stop() }
        let bufferSize = 256 << 10
        let stream = api().stream(route: .get(server.baseURL + "/large"), options: RequestOptions(streamBufferSize: bufferSize))
        var received = 0
        var peak = 0
        for try await chunk in stream {
            received += chunk.count
            peak = max(peak, stream.buffer.retainedBytes)
            try await Task.sleep(for: .microseconds(200))   // slower than the server, never far behind
        }
        #expect(received == size)
        #expect(peak <= 2 * bufferSize, "\(peak) bytes held by a stream of \(bufferSize)")
    }

    /// Over a transport that cannot pause (FoundationNetworking), a reader that waits while the
    /// server sends 48 MiB: the stream holds at most its ceiling, then ends with an error that
    /// says so, after the chunks that came before. It held all 48 MiB.
    @Test(.enabled(if: !TestTransport.pauses, "a transport that pauses holds the server back instead"))
    func aStreamThatCannotPauseEndsAtItsCeiling() async throws {
        let size = 48 << 20
        let server = try Self.serving(size)
        defer { server.stop() }
        let stream = api().stream(route: .get(server.baseURL + "/large"), options: RequestOptions(streamBufferSize: 256 << 10))
        var received = 0
        var peak = 0
        do {
            for try await chunk in stream {
                received += chunk.count
                if received == chunk.count { try await Task.sleep(for: .seconds(2)) }   // the reader waits
                peak = max(peak, stream.buffer.retainedBytes)
            }
            Issue.record("the whole body came: \(received) bytes")
        } catch let error as APIError {
            guard case .responseTooLarge = error else { Issue.record("expected responseTooLarge, got \(error)"); return }
        }
        #expect(peak <= stream.buffer.ceiling, "\(peak) bytes held by a stream whose ceiling is \(stream.buffer.ceiling)")
        #expect(received < size)
    }

    #if os(Linux)
    /// A small gzip body that expands to many times the buffer, read as events in a fast loop:
    /// what the stream holds stays near `bufferSize`. It held the whole expanded body.
    @Test(.enabled(if: TestTransport.pauses, "FoundationNetworking has no pause"))
    func aCompressedStreamReadAsEventsStaysNearItsBufferSize() async throws {
        let event = "data: " + String(repeating: "x", count: 1000) + "\n\n"
        let expanded = Data(String(repeating: event, count: 32 << 10).utf8)
        let body = GzipStream.compressed(expanded)
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nContent-Length: \(body.count)\r\n\r\n")
            _ = connection.send([UInt8](body))
        }
        defer { server.stop() }
        let bufferSize = 256 << 10
        let stream = api().stream(route: .get(server.baseURL + "/events"), options: RequestOptions(streamBufferSize: bufferSize))
        var events = 0
        var peak = 0
        for try await _ in stream.events {
            events += 1
            if events.isMultiple(of: 16) { peak = max(peak, stream.buffer.retainedBytes) }
        }
        #expect(events == 32 << 10)
        #expect(peak <= 2 * bufferSize, "\(peak) bytes held by a stream of \(bufferSize)")
    }
    #endif

    /// Without a view chosen yet, a stream asks for any type, not the parser's JSON: read as
    /// events, a server choosing by `Accept` answered JSON or 406.
    @Test func aStreamAsksForAnyTypeNotTheParsers() async throws {
        let accept = Locked<String?>(nil)
        let server = try RawServer { connection in
            guard let request = connection.readRequest() else { return }
            accept.withLock { $0 = EventSourceTests.field("Accept", in: request) }
            _ = connection.send(Self.chunkedHead + Self.chunk("data: a\n\n") + "0\r\n\r\n")
        }
        defer { server.stop() }
        var events: [String] = []
        for try await event in api().stream(route: .get(server.baseURL + "/events")).events { events.append(event.data) }
        #expect(events == ["a"])
        #expect(accept.withLock { $0 } == "*/*")
    }

    /// A stream cut off after some events says how many bytes it had delivered: it said 0.
    @Test func aStreamCutOffCountsTheBytesItDelivered() async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send(Self.chunkedHead + Self.chunk("data: a\n\n") + Self.chunk("data: b\n\n"))
            connection.pause(100)   // then closed, the chunked body unfinished
        }
        defer { server.stop() }
        var events: [String] = []
        do {
            for try await event in api().stream(route: .get(server.baseURL + "/events")).events { events.append(event.data) }
            Issue.record("no error")
        } catch let error as APIError {
            guard case .transportFailed(let failure) = error else { Issue.record("expected transportFailed, got \(error)"); return }
            #expect(failure.receivedBytes == 18)
            #expect(failure.description.contains("18 bytes"), "\(failure)")
        }
        #expect(events == ["a", "b"])
    }

    /// A line over the cap names the parameter that raises it: the response size limit, which
    /// it named, changes nothing for a stream.
    /// A server that ignores the request to stream and answers JSON: read as events, the answer
    /// fails, naming its type and the body's start, instead of ending as a stream with nothing
    /// to say. The last of repeated `Content-Type` fields is the type, as browsers read it; a
    /// 204 has no events, and no error.
    @Test func eventsOfAnAnswerThatIsNoEventStreamFail() async throws {
        let server = try RawServer { connection in
            while let head = connection.readRequest() {
                let answer = switch head.split(separator: " ").dropFirst().first {
                case "/json": "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 26\r\n\r\n{\"id\": \"x\", \"choices\": []}"
                case "/both": "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Type: text/event-stream\r\nContent-Length: 9\r\n\r\ndata: a\n\n"
                default: "HTTP/1.1 204 No Content\r\n\r\n"
                }
                guard connection.send(answer) else { return }
            }
        }
        defer { server.stop() }
        let api = api()
        do {
            for try await _ in api.stream(route: .post(server.baseURL + "/json")).events { Issue.record("an event") }
            Issue.record("no error")
        } catch let error as APIError {
            guard case .parsingFailed(let failure) = error else { Issue.record("expected parsingFailed, got \(error)"); return }
            #expect((failure.underlying as? NotAnEventStream)?.contentType == "application/json")
            #expect(String(decoding: failure.bodySnippet, as: UTF8.self) == #"{"id": "x", "choices": []}"#)
        }
        var data: [String] = []
        for try await event in api.stream(route: .get(server.baseURL + "/both")).events { data.append(event.data) }
        #expect(data == ["a"])
        for try await _ in api.stream(route: .get(server.baseURL + "/none")).events { Issue.record("an event of a 204") }
    }

    @Test func aLineTooLongNamesItsCap() async throws {
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                _ = connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                                    + Self.chunk(String(repeating: "x", count: 100) + "\n") + "0\r\n\r\n")
            }
        }
        defer { server.stop() }
        let api = api()
        let views: [(String, () async throws -> Void)] = [
            ("lines(maximumLength:)", { for try await _ in api.stream(route: .get(server.baseURL + "/a")).lines(maximumLength: 10) {} }),
            ("values(of:maximumLineLength:)", { for try await _ in api.stream(route: .get(server.baseURL + "/b")).values(of: Int.self, maximumLineLength: 10) {} }),
            ("events(maximumLineLength:maximumEventLength:)", { for try await _ in api.stream(route: .get(server.baseURL + "/c")).events(maximumLineLength: 10) {} }),
        ]
        for (parameter, read) in views {
            do {
                try await read()
                Issue.record("no error")
            } catch let error as APIError {
                guard case .responseTooLarge(let failure) = error else { Issue.record("expected responseTooLarge, got \(error)"); continue }
                #expect(failure.description.contains(parameter) && !failure.description.contains("maximumResponseSize"), "\(failure)")
            }
        }
    }

    /// A stream nobody reads fills its buffer, pauses, and after the idle timeout lets its
    /// connection go.
    @Test(.enabled(if: TestTransport.pauses, "FoundationNetworking has no pause"))
    func aPausedStreamNobodyReadsFreesItsConnection() async throws {
        let closed = Locked(false)
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            let piece = Self.chunk(String(repeating: "x", count: 65_536))
            while connection.send(piece) {}
            closed.withLock { $0 = true }
        }
        defer { server.stop() }
        let stream = api().stream(route: .get(server.baseURL + "/unread"), options: RequestOptions(streamBufferSize: 1 << 20, streamIdleTimeout: 0.3))
        #expect(try await stream.response.value.statusCode == 200)
        #expect(await eventually { closed.withLock { $0 } })
    }

    /// The idle timeout counts from when the app's code has judged the head: a plugin slower
    /// than the timeout is not the server falling silent, and what came with the head is read
    /// before the stream ends. Counted from before the plugin, the stream timed out while it ran
    /// and the body that had come with the head was dropped.
    @Test func aPluginSlowerThanTheIdleTimeoutLosesNothingThatCameWithTheHead() async throws {
        struct Slow: Plugin {
            func observe(_ event: PluginEvent, api: APIContext) {
                guard case .didReceive = event else { return }
                Thread.sleep(forTimeInterval: 0.6)
            }
        }
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + Self.chunk("alive\n"))
            _ = connection.readAvailable(for: 30)
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, plugins: [Slow()]),
                              transport: TestTransport.make(), responseQueue: .global())
        var lines: [String] = []
        do {
            for try await line in api.stream(route: .get(server.baseURL + "/silent"), options: RequestOptions(streamIdleTimeout: 0.3)).lines { lines.append(line) }
            Issue.record("no error")
        } catch let error as APIError {
            guard case .timeout = error else { Issue.record("expected a timeout, got \(error)"); return }
        }
        #expect(lines == ["alive"])
    }

    @Test func aServerThatFallsSilentEndsTheStreamAfterTheIdleTimeout() async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + Self.chunk("alive\n"))
            _ = connection.readAvailable(for: 30)
        }
        defer { server.stop() }
        var lines: [String] = []
        // Long enough that a loaded machine delivers the first chunk, sent with the head, before
        // it passes: at 1 s, with the suite beside four builds on two cores, it did not.
        do {
            for try await line in api().stream(route: .get(server.baseURL + "/silent"), options: RequestOptions(streamIdleTimeout: 3)).lines { lines.append(line) }
            Issue.record("no error")
        } catch let error as APIError {
            guard case .timeout(let failure) = error else { Issue.record("expected a timeout, got \(error)"); return }
            #expect(failure.interval == 3)
        }
        #expect(lines == ["alive"])
    }
}
