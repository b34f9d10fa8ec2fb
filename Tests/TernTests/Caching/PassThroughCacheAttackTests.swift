import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What an API with an ``HTTPCache`` leaves to the server, now heard by the cache's receiver in
/// its pass mode (a stream, an upload, an event source, a request with conditions or a range of
/// its own), and the cache's resend after a `304` for another response, against servers that
/// play them: each case ends as it does through the same API without a cache, but for
/// ``Response/cacheOutcome`` (`nil` without one, `.miss` with one), and the cache keeps,
/// forgets and resends only what RFC 9111 says.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct PassThroughCacheAttackTests {
    typealias Seam = MetricsSeamAttackTests

    /// A number many threads add to.
    final class Tally: @unchecked Sendable {
        private let lock = NSLock()
        private var total = 0
        func add(_ amount: Int) { lock.withLock { total += amount } }
        var value: Int { lock.withLock { total } }
    }

    /// What an error comes to: its case, and the status it carries.
    static func name(_ error: any Error) -> String {
        guard let error = error as? APIError else { return "untyped \(error)" }
        return switch error {
        case .unacceptableStatus: "unacceptableStatus \(error.statusCode ?? 0)"
        case .transportFailed: "transportFailed"
        case .timeout: "timeout"
        case .cancelled: "cancelled"
        case .responseTooLarge: "responseTooLarge"
        case .parsingFailed: "parsingFailed"
        case .fileFailed: "fileFailed"
        default: "\(error)"
        }
    }

    /// What a result comes to: the status and body, or the error's name.
    static func outcome(_ result: Result<Response, some Error>) -> String {
        switch result {
        case .success(let response): outcome(response)
        case .failure(let error): name(error)
        }
    }

    /// What a response comes to: its status and body.
    static func outcome(_ response: Response) -> String {
        "\(response.statusCode) \(String(decoding: response.body, as: UTF8.self))"
    }

    static func api(cached: Bool, timeout: TimeInterval = 30, plugins: [any Plugin] = []) -> AbstractAPI {
        Seam.api(cache: cached ? HTTPCache() : nil, timeout: timeout, plugins: plugins)
    }

    // MARK: Streams

    /// A reader that takes one chunk and stops, a server that sends 256 MiB as fast as it can:
    /// through a cached API as without one, the transfer pauses and the server's writes stop,
    /// far short of the body (over a transport that can pause); a cancel then ends the reading
    /// with `cancelled`.
    @Test(arguments: [false, true]) func aSlowReaderHoldsAFastServerBack(cached: Bool) async throws {
        let sent = Tally()
        let size = TestTransport.pauses ? 256 << 20 : 8 << 20
        let server = try RawServer { connection in
            guard connection.readRequest() != nil,
                  connection.send("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: \(size)\r\n\r\n") else { return }
            let piece = [UInt8](repeating: 0x61, count: 64 << 10)
            for _ in 0..<(size / piece.count) {
                guard connection.send(piece) else { return }
                sent.add(piece.count)
            }
        }
        defer { server.stop() }
        let log = Seam.Log()
        let api = Self.api(cached: cached, plugins: [log])
        let stream = api.stream(route: .get(server.baseURL + "/flood"), options: RequestOptions(streamBufferSize: 256 << 10))
        let iterator = stream.makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first.map { !$0.isEmpty && $0.allSatisfy { $0 == 0x61 } } == true)
        let head = try await stream.response.value
        #expect(head.statusCode == 200)
        // Room for the server to run as far as the transfer lets it.
        try await Task.sleep(for: .seconds(2))
        let far = sent.value
        if TestTransport.pauses {
            #expect(far < 96 << 20, "the server sent \(far >> 20) MiB to a reader that took one chunk")
        }
        stream.cancel()
        var outcome = "end"
        do {
            while try await iterator.next() != nil {}
        } catch {
            outcome = Self.name(error)
        }
        // A transport that cannot pause may have hit the stream's ceiling first.
        #expect(outcome == "cancelled" || !TestTransport.pauses && outcome == "responseTooLarge", "\(outcome)")
        // (What the cache says at such an end: StreamCacheOutcomeTests.)
        #expect(await eventually { log.ends.count == 1 } && log.ends.count == 1)
    }

    /// A body that stops coming halfway: the stream's idle timeout ends it with `timeout`, what
    /// came before it read, through a cached API as without one; the server's connection closes.
    @Test(arguments: [false, true]) func aStreamIdleMidBodyTimesOut(cached: Bool) async throws {
        let closed = Tally()
        let server = try RawServer { connection in
            guard connection.readRequest() != nil,
                  connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\nfirst line\n") else { return }
            _ = connection.readAvailable(for: 30)
            closed.add(1)
        }
        defer { server.stop() }
        let log = Seam.Log()
        let api = Self.api(cached: cached, plugins: [log])
        let stream = api.stream(route: .get(server.baseURL + "/idle"), options: RequestOptions(streamIdleTimeout: 1))
        var lines: [String] = []
        var outcome = "end"
        do {
            for try await line in stream.lines { lines.append(line) }
        } catch {
            outcome = Self.name(error)
        }
        #expect(lines == ["first line"] && outcome == "timeout", "\(lines) \(outcome)")
        let head = try await stream.response.value
        #expect(head.statusCode == 200 && head.cacheOutcome == (cached ? .miss : nil), "\(head.metrics)")
        // (What the cache says at such an end: StreamCacheOutcomeTests.)
        #expect(await eventually { log.ends.count == 1 } && log.ends.count == 1)
        #expect(await eventually { closed.value == 1 })
    }

    /// An event source whose connections end after an event: it reconnects with the last event's
    /// ID, and ends at the server's `204`, through a cached API as without one; the cache keeps
    /// none of it (a `GET` of its URL goes to the server).
    @Test(arguments: [false, true]) func anEventSourceReconnectsWithItsLastEventID(cached: Bool) async throws {
        let count = Seam.Counter()
        let heads = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                heads.append(request.lowercased())
                let stream = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: max-age=600\r\nConnection: close\r\n\r\n"
                switch count.next() {
                case 1: connection.send(stream + "id: 7\ndata: a\n\n")
                case 2: connection.send(stream + "data: b\n\n")
                case 3: connection.send("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                default: connection.send(RawServer.Connection.response("plain", headers: "Cache-Control: max-age=600\r\nConnection: close\r\n"))
                }
                return
            }
        }
        defer { server.stop() }
        let api = Self.api(cached: cached)
        var events: [ServerSentEvent] = []
        for try await event in api.events(route: .get(server.baseURL + "/events"), reconnection: EventReconnection(delay: 0.05)) {
            events.append(event)
        }
        #expect(events.map(\.data) == ["a", "b"] && events.map(\.lastEventID) == ["7", "7"], "\(events)")
        #expect(count.value == 3)
        let sent = heads.items
        #expect(sent.count == 3 && !sent[0].contains("last-event-id") && sent.dropFirst().allSatisfy { $0.contains("last-event-id: 7\r\n") }, "\(sent)")
        let plain: Response = try await api.request(route: .get(server.baseURL + "/events")).value
        #expect(Self.outcome(plain) == "200 plain" && count.value == 4 && plain.cacheOutcome == (cached ? .miss : nil))
    }

    // MARK: Uploads

    enum Upload: String, CaseIterable, Sendable {
        case data, file, stream
    }

    static let uploadSize = 4 << 20

    /// A body of `uploadSize` bytes sent from `upload`, its file (if any) removed by `cleanUp`.
    static func body(_ upload: Upload) throws -> (BodyParameters, cleanUp: @Sendable () -> Void) {
        let bytes = Data(repeating: 0x55, count: uploadSize)
        switch upload {
        case .data:
            return (BodyParameters(bytes), {})
        case .file, .stream:
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-pass-upload-\(UUID())")
            try bytes.write(to: file)
            let cleanUp: @Sendable () -> Void = { try? FileManager.default.removeItem(at: file) }
            if upload == .file { return (BodyParameters(file), cleanUp) }
            return (BodyParameters(length: Int64(uploadSize)) { InputStream(url: file)! }, cleanUp)
        }
    }

    /// A server that answers an upload early, before its body, with a `413`, and closes once it
    /// has drained what the client sent: the upload fails with `unacceptableStatus` 413, from
    /// data, a file or a stream, through a cached API as without one.
    @Test(arguments: [false, true], Upload.allCases) func anUploadRefusedEarlyFailsAlike(cached: Bool, upload: Upload) async throws {
        let server = try RawServer { connection in
            guard connection.readHead() != nil else { return }
            connection.send("HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo big!")
            _ = connection.discard(Self.uploadSize, within: 30)
        }
        defer { server.stop() }
        let (body, cleanUp) = try Self.body(upload)
        defer { cleanUp() }
        let api = Self.api(cached: cached)
        let result = await (api.request(route: .post(server.baseURL + "/upload"), parameters: body) as Promise<Response>).result
        #expect(Self.outcome(result) == "unacceptableStatus 413", "\(result)")
    }

    /// An unsafe request forgets the stored response for its URL when its answer is a `2xx` or
    /// `3xx`, and only then (RFC 9111, §4.4): a `PUT` or `POST` with a body from data, a file or
    /// a stream answered `413` or `500` leaves the fresh response served from the cache, and
    /// one answered `201` makes the next `GET` go to the server. The uploads say `.miss`.
    @Test(arguments: Upload.allCases) func anUploadForgetsTheStoredResponseOnlyOnSuccess(upload: Upload) async throws {
        let (count, uploads) = (Seam.Counter(), Seam.Counter())
        let statuses = ["413 Content Too Large", "500 Internal Server Error", "201 Created"]
        let server = try RawServer { connection in
            while let head = connection.readHead() {
                let number = count.next()
                if head.hasPrefix("GET") {
                    guard connection.send(RawServer.Connection.response("version \(number)", headers: "Cache-Control: max-age=600\r\n")) else { return }
                    continue
                }
                _ = connection.discard(Self.uploadSize, within: 30)
                let upload = uploads.next()
                guard connection.send(RawServer.Connection.response("upload \(upload)", status: statuses[upload - 1])) else { return }
            }
        }
        defer { server.stop() }
        let api = Self.api(cached: true)
        let url = server.baseURL + "/doc"
        func get() async throws -> Response { try await api.request(route: .get(url)).value }
        let first = try await get()
        #expect(Self.outcome(first) == "200 version 1" && first.cacheOutcome == .miss)
        for (index, status) in statuses.enumerated() {
            let (body, cleanUp) = try Self.body(upload)
            defer { cleanUp() }
            let route: Route = index % 2 == 0 ? .put(url) : .post(url)
            let sent = await (api.request(route: route, parameters: body, options: RequestOptions(validation: .acceptAll)) as Promise<Response>).result
            #expect(Self.outcome(sent) == "\(status.prefix(3)) upload \(index + 1)", "\(sent)")
            #expect((try? sent.get())?.cacheOutcome == .miss)
            let after = try await get()
            if status.hasPrefix("2") {
                // The server's fifth request: three uploads after the first `GET`.
                #expect(Self.outcome(after) == "200 version 5" && after.cacheOutcome == .miss, "\(after.metrics)")
            } else {
                #expect(Self.outcome(after) == "200 version 1" && after.cacheOutcome == .hit, "\(after.metrics)")
            }
        }
        #expect(count.value == 5 && uploads.value == 3)
    }

    /// A file of 64 MiB (sparse) cut to 1 MiB while it is sent, the server holding its reading
    /// until then: the upload fails with the same typed error through a cached API as without
    /// one (`transportFailed`, the body ended after 1 MiB of its stated 64), never the request's timeout (which would mean the client waited on bytes it
    /// announced and never sent).
    @Test(arguments: [false, true]) func aFileCutWhileSentFailsAlike(cached: Bool) async throws {
        let size = 64 << 20
        let gate = DispatchSemaphore(value: 0)
        let heads = Recorder<String>()
        let drained = Recorder<Int>()
        let server = try RawServer { connection in
            guard let head = connection.readHead() else { return }
            heads.append(head)
            _ = gate.wait(timeout: .now() + 30)
            let read = connection.discard(size, within: 30)
            drained.append(read)
            if read == size { connection.send(RawServer.Connection.response("whole")) }
        }
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-pass-cut-\(UUID())")
        #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(truncate(file.path, off_t(size)) == 0)
        let api = Self.api(cached: cached, timeout: 30)
        let upload: Promise<Response> = api.request(route: .put(server.baseURL + "/upload"), parameters: BodyParameters(file))
        #expect(await eventually { heads.items.count == 1 })
        #expect(truncate(file.path, off_t(1 << 20)) == 0)
        gate.signal()
        let result = await upload.result
        #expect(Self.outcome(result) == "transportFailed", "\(result)")
        // Some of the file past the cut may have been read ahead before it.
        #expect("\(result)".contains("The request body ended after ") && "\(result)".contains(" of its stated 67108864 bytes"), "\(result)")
        #expect(await eventually { drained.items.count == 1 } && drained.items.allSatisfy { $0 < size }, "\(drained.items)")
    }

    /// A download cut at 40,000 of its 100,000 bytes, resumed through a cached API with a
    /// `Range`: the file is whole; neither the cut `200` nor the `206` is kept as the whole
    /// response (the next `GET` goes to the server and gets all of it, which is then kept).
    @Test func aResumedDownloadIsNeverKeptAsTheWhole() async throws {
        let size = 100_000
        let body = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) })
        let count = Seam.Counter()
        // The first whole answer is cut at 40,000 bytes.
        let server = try RawServer.rangedBody { (body, "\"d\"", count.next() == 1) }
        defer { server.stop() }
        let api = Self.api(cached: true)
        let url = server.baseURL + "/file"
        guard let cut = try await CutDownload.make(api, url: url) else { return }
        defer { try? FileManager.default.removeItem(at: cut.directory) }
        #expect(cut.resume.offset == 40_000)
        let file = try await api.download(route: .get(url), to: cut.destination, resumingFrom: cut.resume).value
        #expect(try Data(contentsOf: file.fileURL) == body)
        let whole: Response = try await api.request(route: .get(url)).value
        #expect(whole.body == body && whole.cacheOutcome == .miss)
        let hit: Response = try await api.request(route: .get(url)).value
        #expect(hit.body == body && hit.cacheOutcome == .hit)
        #expect(count.value == 3)
    }

    // MARK: Conditions and ranges of the request's own

    /// A `GET` with an `If-None-Match` of its own, answered `304` (fresh for 600 s, another
    /// ETag): the caller gets the `304`, and the cache neither keeps it as a body nor freshens
    /// the kept response with it; the next plain `GET` revalidates the kept one with its own
    /// ETag, and its answer is the server's `200`.
    @Test func aRequestsOwnConditionsNeverStoreNorFreshenWithA304() async throws {
        let count = Seam.Counter()
        let heads = Recorder<String>()
        let server = try Seam.server(count: count) { request, number in
            heads.append(request.lowercased())
            switch number {
            case 1: return RawServer.Connection.response("v1 body", headers: "ETag: \"v1\"\r\nCache-Control: no-cache\r\n")
            case 2: return "HTTP/1.1 304 Not Modified\r\nETag: \"mine\"\r\nCache-Control: max-age=600\r\n\r\n"
            default: return RawServer.Connection.response("v3 body", headers: "ETag: \"v3\"\r\nCache-Control: no-cache\r\n")
            }
        }
        defer { server.stop() }
        let api = Self.api(cached: true)
        let url = server.baseURL + "/doc"
        _ = try await (api.request(route: .get(url)) as Promise<Response>).value
        let own = RequestOptions(headers: ["If-None-Match": "\"mine\""], validation: .acceptAll)
        let conditional: Response = try await api.request(route: .get(url), options: own).value
        #expect(Self.outcome(conditional) == "304 " && conditional.cacheOutcome == .miss)
        let plain: Response = try await api.request(route: .get(url)).value
        #expect(Self.outcome(plain) == "200 v3 body" && plain.cacheOutcome == .miss)
        #expect(count.value == 3 && heads.items.last?.contains("if-none-match: \"v1\"\r\n") == true, "\(heads.items)")
    }

    /// A `GET` with a `Range` of its own answered `206` (fresh for 600 s): the caller gets its
    /// part; the cache never keeps it as the whole, so the next plain `GET` goes to the server
    /// and gets the whole body, which is then kept and served.
    @Test func aRangeRequestNeverStoresItsPartAsTheWhole() async throws {
        let count = Seam.Counter()
        let server = try Seam.server(count: count) { request, _ in
            if request.lowercased().contains("range: bytes=0-3") {
                return "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-3/8\r\nContent-Length: 4\r\nCache-Control: max-age=600\r\nETag: \"w\"\r\n\r\nabcd"
            }
            return RawServer.Connection.response("abcdefgh", headers: "Cache-Control: max-age=600\r\nETag: \"w\"\r\n")
        }
        defer { server.stop() }
        let api = Self.api(cached: true)
        let url = server.baseURL + "/bytes"
        let part: Response = try await api.request(route: .get(url), options: RequestOptions(headers: ["Range": "bytes=0-3"])).value
        #expect(Self.outcome(part) == "206 abcd" && part.cacheOutcome == .miss)
        let whole: Response = try await api.request(route: .get(url)).value
        #expect(Self.outcome(whole) == "200 abcdefgh" && whole.cacheOutcome == .miss)
        let hit: Response = try await api.request(route: .get(url)).value
        #expect(Self.outcome(hit) == "200 abcdefgh" && hit.cacheOutcome == .hit)
        let partAgain: Response = try await api.request(route: .get(url), options: RequestOptions(headers: ["Range": "bytes=0-3"])).value
        #expect(Self.outcome(partAgain) == "206 abcd" && partAgain.cacheOutcome == .miss)
        #expect(count.value == 3)
    }

    // MARK: A 304 for another response, from hostile servers

    enum AfterAnother304: String, CaseIterable, Sendable {
        /// Every conditional or not, a `304` for yet another ETag.
        case another304Again
        /// The connection closes as the request sent again arrives, every time.
        case connectionClosed
        /// A `200` whose body stops short of its `Content-Length`, and the connection closes.
        case shortBody
        /// A `200` whose body is far larger than the request's size limit.
        case tooLarge
    }

    /// A revalidation answered with a `304` for another ETag, then the request sent again
    /// without conditions meets a hostile server: it ends, with the typed error the same answer
    /// gets without a cache, the server asked a bounded number of times (no loop); a plugin
    /// hears the request sent once and answered once.
    @Test(arguments: AfterAnother304.allCases) func aResendAfterA304ForAnotherResponseEndsTyped(after: AfterAnother304) async throws {
        let count = Seam.Counter()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let number = count.next()
                if number == 1 {
                    guard connection.send(RawServer.Connection.response("one", headers: "ETag: \"v1\"\r\nCache-Control: no-cache\r\n")) else { return }
                    continue
                }
                if request.lowercased().contains("if-none-match: \"v1\"") {
                    guard connection.send("HTTP/1.1 304 Not Modified\r\nETag: \"v2\"\r\n\r\n") else { return }
                    continue
                }
                switch after {
                case .another304Again:
                    guard connection.send("HTTP/1.1 304 Not Modified\r\nETag: \"v\(number + 1)\"\r\n\r\n") else { return }
                case .connectionClosed:
                    return
                case .shortBody:
                    connection.send("HTTP/1.1 200 OK\r\nContent-Length: 100\r\nETag: \"v2\"\r\n\r\nshort")
                    return
                case .tooLarge:
                    connection.send("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nETag: \"v2\"\r\n\r\n" + String(repeating: "z", count: 100_000))
                    return
                }
            }
        }
        defer { server.stop() }
        let log = Seam.Log()
        let api = Self.api(cached: true, plugins: [log])
        let url = server.baseURL + "/doc"
        let options = RequestOptions(maximumResponseSize: 10_000)
        _ = try await (api.request(route: .get(url), options: options) as Promise<Response>).value
        let result = await (api.request(route: .get(url), options: options) as Promise<Response>).result
        let expected = switch after {
        case .another304Again: "unacceptableStatus 304"
        case .connectionClosed, .shortBody: "transportFailed"
        case .tooLarge: "responseTooLarge"
        }
        #expect(Self.outcome(result) == expected, "\(result)")
        // The same last answer, through the API without a cache.
        if after != .another304Again {
            let bare = await (Self.api(cached: false).request(route: .get(url), options: options) as Promise<Response>).result
            #expect(Self.outcome(bare) == expected, "\(bare)")
        }
        #expect(await eventually { log.answers.count == 2 })
        #expect(log.sends.count == 2 && log.answers.count == 2, "\(log.events.items)")
        let asked = count.value
        try await Task.sleep(for: .milliseconds(500))
        #expect(count.value == asked && (3...6).contains(asked), "asked \(asked)")
    }

    /// A `304` for another ETag that carries a body of its own (which a `304` never has), on a
    /// connection kept open: the request sent again gets the server's `200` (both transports
    /// drop the `304`'s bytes with its connection); never a hang, never those bytes as the answer.
    @Test func a304ForAnotherResponseWithABodyEndsTyped() async throws {
        let count = Seam.Counter()
        let server = try Seam.server(count: count) { request, number in
            switch number {
            case 1: RawServer.Connection.response("one", headers: "ETag: \"v1\"\r\nCache-Control: no-cache\r\n")
            case _ where request.lowercased().contains("if-none-match:"):
                "HTTP/1.1 304 Not Modified\r\nETag: \"v2\"\r\nContent-Length: 5\r\n\r\nhello"
            default: RawServer.Connection.response("two", headers: "ETag: \"v2\"\r\nCache-Control: no-cache\r\n")
            }
        }
        defer { server.stop() }
        let api = Self.api(cached: true)
        let url = server.baseURL + "/doc"
        _ = try await (api.request(route: .get(url)) as Promise<Response>).value
        let result = await (api.request(route: .get(url)) as Promise<Response>).result
        let outcome = Self.outcome(result)
        #expect(outcome == "200 two", "\(result)")
        #expect((try? result.get())?.cacheOutcome ?? .miss == .miss)
    }

    #if os(Linux)
    enum OverHTTP2: String, CaseIterable, Sendable {
        case answered, reset, another304Again
    }

    /// Over HTTP/2 (libcurl): a revalidation answered with a `304` for another ETag, then the
    /// request sent again without conditions, on the same connection, answered with a `200`, a
    /// reset stream, or another `304` for yet another ETag: the `200` with both exchanges in its
    /// metrics, each once; or the typed error; the server asked three times.
    @Test(arguments: OverHTTP2.allCases) func a304ForAnotherResponseOverHTTP2(after: OverHTTP2) async throws {
        guard TestTransport.isCurl else { return }
        let last: HTTP2Server.Misbehavior? = switch after {
        case .answered: nil
        case .reset: .reset
        case .another304Again: .notModified(fields: [(34, "\"v3\"")])
        }
        var misbehaving: [Int: HTTP2Server.Misbehavior] = [
            1: .answer(fields: [(34, "\"v1\""), (24, "no-cache"), (28, "2")], body: Data("{}".utf8)),
            2: .notModified(fields: [(34, "\"v2\"")]),
        ]
        misbehaving[3] = last
        let server = try HTTP2Server(answering: Data("[]".utf8), misbehaving: misbehaving)
        let log = Seam.Log()
        let api = Seam.api(cache: HTTPCache(), plugins: [log], transport: try CurlTransport(trusting: server.certificates.authority))
        let first: Response = try await api.request(route: .get(server.url + "/doc")).value
        #expect(Self.outcome(first) == "200 {}" && first.cacheOutcome == .miss)
        let result = await (api.request(route: .get(server.url + "/doc")) as Promise<Response>).result
        switch after {
        case .answered:
            let second = try result.get()
            #expect(Self.outcome(second) == "200 []" && second.cacheOutcome == .miss)
            #expect(second.metrics.map(\.statusCode) == [304, 200] && second.metrics.map(\.httpVersion) == ["HTTP/2", "HTTP/2"], "\(second.metrics)")
        case .reset:
            #expect(Self.outcome(result) == "transportFailed", "\(result)")
        case .another304Again:
            #expect(Self.outcome(result) == "unacceptableStatus 304", "\(result)")
        }
        #expect(server.requests.count == 3 && server.connections == 1)
        #expect(await eventually { log.answers.count == 2 } && log.sends.count == 2 && log.answers.count == 2, "\(log.events.items)")
    }
    #endif

    enum ResendAnswer: String, CaseIterable, Sendable {
        /// A `503` asking to be retried: the request's retry, unconditional (the kept response
        /// was forgotten), is answered.
        case retried
        /// A `401`: the credentials are refreshed and the request replayed.
        case refreshed
        /// A `302` to another path, which answers.
        case redirected
    }

    /// Signs with the generation of its credentials, refreshed at once.
    final class QuickRefresh: APIDelegate, @unchecked Sendable {   // unchecked: its state is a `let`
        let refreshes = Seam.Counter()
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer \(refreshes.value)", forHTTPHeaderField: "Authorization")
        }
        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            _ = refreshes.next()
            return Promise(value: (), in: .global())
        }
    }

    /// A revalidation answered with a `304` for another ETag, and the request sent again
    /// answered with a `503` (retried), a `401` (refreshed, replayed) or a `302` (followed): the
    /// last answer is the request's; its metrics list every exchange once, in order, the `304`
    /// first (over libcurl, which measures them); plugins hear each attempt once.
    @Test(arguments: ResendAnswer.allCases) func aResendAfterA304MeetsTheRequestsOtherStages(answer: ResendAnswer) async throws {
        let count = Seam.Counter()
        let server = try Seam.server(count: count) { request, number in
            let lowered = request.lowercased()
            // `public`: kept though the request carried credentials (the delegate's).
            if number == 1 { return RawServer.Connection.response("one", headers: "ETag: \"v1\"\r\nCache-Control: public, no-cache\r\n") }
            if lowered.contains("if-none-match: \"v1\"") { return "HTTP/1.1 304 Not Modified\r\nETag: \"v2\"\r\n\r\n" }
            if lowered.hasPrefix("get /moved") { return RawServer.Connection.response("moved") }
            switch (answer, number) {
            case (.retried, 3): return RawServer.Connection.response("busy", status: "503 Service Unavailable", headers: "Retry-After: 0\r\n")
            case (.refreshed, 3) where lowered.contains("bearer 0"): return RawServer.Connection.response("who?", status: "401 Unauthorized")
            case (.redirected, 3): return "HTTP/1.1 302 Found\r\nLocation: /moved\r\nContent-Length: 0\r\n\r\n"
            default: return RawServer.Connection.response("two", headers: "ETag: \"v2\"\r\nCache-Control: no-cache\r\n")
            }
        }
        defer { server.stop() }
        let log = Seam.Log()
        let delegate = QuickRefresh()
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: RetryPolicy(maxRetries: 1, baseDelay: 0.01), plugins: [log],
                                                              cache: HTTPCache()),
                              transport: TestTransport.make(), responseQueue: .global())
        if answer == .refreshed { api.delegate = delegate }
        let url = server.baseURL + "/doc"
        let first: Response = try await api.request(route: .get(url)).value
        #expect(Self.outcome(first) == "200 one")
        let second: Response = try await api.request(route: .get(url)).value
        let expected: (body: String, statuses: [Int]) = switch answer {
        case .retried: ("200 two", [304, 503, 200])
        case .refreshed: ("200 two", [304, 401, 200])
        case .redirected: ("200 moved", [304, 302, 200])
        }
        #expect(Self.outcome(second) == expected.body && second.cacheOutcome == .miss, "\(second.metrics)")
        #expect(count.value == 4, "asked \(count.value) times")
        if TestTransport.isCurl {
            #expect(second.metrics.map(\.statusCode) == expected.statuses, "\(second.metrics)")
        }
        #expect(await eventually(timeout: 10) { log.answers.count == 3 })
        // The first request's attempt, then the second's two: each heard once.
        #expect(log.sends.count == 3 && log.answers.count == 3, "\(log.events.items)")
        #expect(delegate.refreshes.value == (answer == .refreshed ? 1 : 0))
    }

    // MARK: Between the 304 and the resend

    /// Hands every exchange to `base`, and runs `atHead` and `beforeEnd` with the exchange's
    /// number (from 1) before its receiver hears its head and its end. The task of exchange
    /// `heldSend` is handed back only once its receiver has heard its end (or after 20 s): the
    /// pipeline, on its own queue, has no task to cancel until then.
    final class Interposer: Transport, @unchecked Sendable {   // unchecked: its state is `let`s
        let base: any Transport
        let sends = Seam.Counter()
        let atHead: @Sendable (Int) -> Void
        let beforeEnd: @Sendable (Int) -> Void
        let heldSend: Int?
        let heldEnded = DispatchSemaphore(value: 0)

        init(base: any Transport, holdingTheTaskOf heldSend: Int? = nil, atHead: @escaping @Sendable (Int) -> Void = { _ in },
             beforeEnd: @escaping @Sendable (Int) -> Void) {
            (self.base, self.heldSend, self.atHead, self.beforeEnd) = (base, heldSend, atHead, beforeEnd)
        }

        func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
            let number = sends.next()
            let hearing = Hearing(receiver, number: number, ended: number == heldSend ? heldEnded : nil, atHead: atHead, beforeEnd: beforeEnd)
            let task = base.send(request, to: hearing)
            if number == heldSend { _ = heldEnded.wait(timeout: .now() + 20) }
            return task
        }

        final class Hearing: TransportReceiver {
            let receiver: any TransportReceiver
            let number: Int
            let ended: DispatchSemaphore?
            let atHead: @Sendable (Int) -> Void
            let beforeEnd: @Sendable (Int) -> Void

            init(_ receiver: any TransportReceiver, number: Int, ended: DispatchSemaphore?, atHead: @escaping @Sendable (Int) -> Void,
                 beforeEnd: @escaping @Sendable (Int) -> Void) {
                (self.receiver, self.number, self.ended, self.atHead, self.beforeEnd) = (receiver, number, ended, atHead, beforeEnd)
            }

            func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) { receiver.didSendBodyData(totalSent, of: totalExpected) }
            func didReceive(_ head: ResponseHead) -> TransferDecision {
                atHead(number)
                return receiver.didReceive(head)
            }
            func didReceive(_ chunk: Data) -> TransferDecision { receiver.didReceive(chunk) }
            func didCollect(_ metrics: TransferMetrics) { receiver.didCollect(metrics) }
            func didComplete(with error: (any Error)?) {
                beforeEnd(number)
                receiver.didComplete(with: error)
                ended?.signal()
            }
        }
    }

    enum Ender: String, CaseIterable, Sendable {
        case cancel, timeout
        /// A cancel before the transport's task reached the pipeline, which has nothing to cancel then.
        case cancelBeforeTheTaskIsHandedOver
    }

    /// The request is cancelled, or times out, after the server's `304` for another ETag came
    /// and before the cache sends the request again: it settles with `cancelled` or `timeout`,
    /// and the request is not sent again (the transport is not asked to, the server never sees it).
    /// The pipeline runs on its own queue (a plugin is app code), so it can get the task late.
    @Test(arguments: Ender.allCases) func anEndBetweenA304AndItsResendSendsNothingMore(ender: Ender) async throws {
        let count = Seam.Counter()
        let server = try Seam.server(count: count) { _, number in
            switch number {
            case 1: RawServer.Connection.response("one", headers: "ETag: \"v1\"\r\nCache-Control: no-cache\r\n")
            case 2: "HTTP/1.1 304 Not Modified\r\nETag: \"v2\"\r\n\r\n"
            default: RawServer.Connection.response("two", headers: "ETag: \"v2\"\r\nCache-Control: no-cache\r\n")
            }
        }
        defer { server.stop() }
        let pending = Recorder<Promise<Response>>()
        let ended = Recorder<Bool>()
        let transport = Interposer(base: TestTransport.make() ?? URLSessionTransport(),
                                   holdingTheTaskOf: ender == .cancelBeforeTheTaskIsHandedOver ? 2 : nil) { number in
            guard number == 2 else { return }
            switch ender {
            case .cancel, .cancelBeforeTheTaskIsHandedOver:
                // The request may be sent before the test has its promise in hand (a loaded
                // machine once ran the send first): it waits for it.
                let deadline = Date().addingTimeInterval(20)
                while pending.items.isEmpty, Date() < deadline { usleep(1_000) }
                guard let promise = pending.items.first else { return }
                let done = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    promise.cancel()
                    done.signal()
                }
                ended.append(done.wait(timeout: .now() + 20) == .success)
            case .timeout:
                // Until the request's timer (2 s) has ended it, however late a loaded machine fires it.
                let deadline = Date().addingTimeInterval(20)
                while pending.items.first?.isPending != false, Date() < deadline { usleep(1_000) }
                ended.append(pending.items.first?.isPending == false)
            }
        }
        let log = Seam.Log()
        let api = Seam.api(cache: HTTPCache(), timeout: ender == .timeout ? 2 : 30, plugins: [log], transport: transport)
        let url = server.baseURL + "/doc"
        _ = try await (api.request(route: .get(url), options: RequestOptions(timeout: 30)) as Promise<Response>).value
        let second: Promise<Response> = api.request(route: .get(url))
        pending.append(second)
        let result = await second.result
        #expect(Self.outcome(result) == (ender == .timeout ? "timeout" : "cancelled"), "\(result)")
        #expect(await eventually { !ended.items.isEmpty } && ended.items == [true], "the cancel did not return")
        try await Task.sleep(for: .seconds(1))
        #expect(transport.sends.value == 2, "the transport was asked to send \(transport.sends.value) exchanges")
        #expect(count.value == 2, "the server was asked \(count.value) times")
        #expect(log.sends.count == 2 && log.answers.count == 2, "\(log.events.items)")
    }
}
