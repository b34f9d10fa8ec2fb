#if os(Linux)
import Foundation
import FoundationNetworking
import Testing
import Tern
import TernTesting

/// HTTP/2 over TLS whose every request is played by a script, for GOAWAYs: like
/// ``HTTP2Server`` (whose frames it reads the same way), but the script sees which connection
/// and stream each request came on, may hold it unanswered, send any frame, answer held
/// streams later, or close the connection.
final class ScriptedHTTP2Server: @unchecked Sendable {
    struct Request: Equatable {
        /// The connection, numbered from 1 in the order they began.
        let connection: Int
        let stream: UInt32
        let body: Data
    }

    /// One connection, as the script sees it; used on that connection's thread only.
    final class Connection: @unchecked Sendable {
        let number: Int
        private let raw: RawServer.Connection
        /// The streams the script holds unanswered.
        var held: [UInt32] = []
        /// Set by the script: the connection is closed once the frame being handled is.
        var closes = false

        init(number: Int, raw: RawServer.Connection) {
            self.number = number
            self.raw = raw
        }

        func send(_ kind: HTTP2Server.Kind, _ flags: UInt8, _ stream: UInt32, _ payload: Data) {
            var frame = [UInt8(payload.count >> 16 & 0xff), UInt8(payload.count >> 8 & 0xff), UInt8(payload.count & 0xff), kind.rawValue, flags]
            frame.append(contentsOf: [UInt8(stream >> 24 & 0x7f), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)])
            frame.append(contentsOf: payload)
            _ = raw.send(frame)
        }

        /// A `200` whose JSON body names the connection and stream: `[{"name":"c1s3"}]`.
        func answer(_ stream: UInt32) {
            let body = Data(#"[{"name":"c\#(number)s\#(stream)"}]"#.utf8)
            headers(stream, endsStream: false, fields: [(31, "application/json"), (28, String(body.count))])
            send(.data, 0x1, stream, body)
        }

        /// The `200` head alone, with `fields` (HPACK static indexes, as in ``HTTP2Server``).
        func headers(_ stream: UInt32, endsStream: Bool, fields: [(index: Int, value: String)], status: UInt8 = 0x88) {
            var block = Data([status])
            for (index, value) in fields {
                block.append(contentsOf: [0x0f, UInt8(index - 15), UInt8(value.utf8.count)])
                block.append(contentsOf: value.utf8)
            }
            send(.headers, 0x4 | (endsStream ? 0x1 : 0), stream, block)
        }

        func goAway(lastStream: UInt32, error: UInt32 = 0) {
            send(.goAway, 0, 0, HTTP2LateFrameTests.goAway(lastStream: lastStream, error: error))
        }
    }

    let certificates: TestCertificates
    private var tls: RelayedRawServer?
    private let lock = NSLock()
    private var seenConnections = 0
    private var seenRequests: [Request] = []

    /// `script` plays each request once its stream has ended, on its connection's thread.
    init(script: @escaping @Sendable (Request, Connection) -> Void) throws {
        certificates = try TestCertificates()
        tls = try RelayedRawServer(certificates: certificates) { [weak self] raw in
            guard let self else { return }
            var buffer = Data()
            var bodies: [UInt32: Data] = [:]
            var connection: Connection?
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let preface = Data("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
            while case let count = recv(raw.socket, &chunk, chunk.count, 0), count > 0 {
                buffer.append(contentsOf: chunk[0..<count])
                if connection == nil {
                    guard buffer.count >= preface.count else { continue }
                    guard buffer.prefix(preface.count) == preface else { return }
                    let number = lock.withLock {
                        seenConnections += 1
                        return seenConnections
                    }
                    connection = Connection(number: number, raw: raw)
                    connection?.send(.settings, 0, 0, Data())
                    buffer.removeFirst(preface.count)
                }
                guard let connection else { continue }
                while buffer.count >= 9 {
                    let header = [UInt8](buffer.prefix(9))
                    let length = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
                    guard buffer.count >= 9 + length else { break }
                    let flags = header[4]
                    let stream = (UInt32(header[5]) << 24 | UInt32(header[6]) << 16 | UInt32(header[7]) << 8 | UInt32(header[8])) & 0x7fff_ffff
                    let payload = Data(buffer[(buffer.startIndex + 9)..<(buffer.startIndex + 9 + length)])
                    buffer.removeFirst(9 + length)
                    var ended = false
                    switch HTTP2Server.Kind(rawValue: header[3]) {
                    case .settings where flags & 0x1 == 0: connection.send(.settings, 0x1, 0, Data())
                    case .ping where flags & 0x1 == 0: connection.send(.ping, 0x1, 0, payload)
                    case .headers, .continuation:
                        bodies[stream] = bodies[stream] ?? Data()
                        ended = flags & 0x1 != 0
                    case .data:
                        bodies[stream, default: Data()].append(payload)
                        ended = flags & 0x1 != 0
                    default: break
                    }
                    if ended {
                        let request = Request(connection: connection.number, stream: stream, body: bodies.removeValue(forKey: stream) ?? Data())
                        lock.withLock { seenRequests.append(request) }
                        script(request, connection)
                    }
                    if connection.closes { return }
                }
            }
        }
    }

    var url: String { tls?.url ?? "" }
    var connections: Int { lock.withLock { seenConnections } }
    var requests: [Request] { lock.withLock { seenRequests } }
}

/// HTTP/2 over libcurl: requests that cross a GOAWAY on a kept connection (39a30bb), attacked.
/// Those at or below its last stream are answered once, on that connection; those above are
/// sent again once on a new one when their method may be, and fail as connection lost
/// otherwise; none is sent again once a byte of its answer came; every promise settles; a
/// server that says GOAWAY to everything fails the request, typed, and is not asked again and
/// again.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct HTTP2GoAwayAttackTests {
    struct Item: Codable, Equatable {
        let name: String
    }

    static func api(_ server: ScriptedHTTP2Server, policy: RetryPolicy = .never) throws -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(retryPolicy: policy),
                    transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
    }

    /// The first request on a connection is answered, so that the next ones find it kept.
    static func warmUp(_ api: AbstractAPI, _ server: ScriptedHTTP2Server) async throws {
        let first: [Item] = try await api.request(route: .get(server.url + "/first")).value
        #expect(first == [Item(name: "c1s1")])
    }

    /// A server that holds the kept connection's requests until it has `count` of them, then
    /// says GOAWAY with the third's stream as the last, then (`answersFirst`: before it) answers
    /// the first three, and closes the connection (`closes`) or leaves it open.
    static func goAwayAtTheThird(of count: Int, answersFirst: Bool = false, closes: Bool = false) throws -> ScriptedHTTP2Server {
        try ScriptedHTTP2Server { request, connection in
            guard request.connection == 1, request.stream > 1 else { return connection.answer(request.stream) }
            connection.held.append(request.stream)
            guard connection.held.count == count else { return }
            let last = connection.held.sorted()[2]
            let taken = connection.held.filter { $0 <= last }
            if answersFirst { taken.forEach(connection.answer) }
            connection.goAway(lastStream: last)
            if !answersFirst { taken.forEach(connection.answer) }
            if closes {
                usleep(100_000)
                connection.closes = true
            }
        }
    }

    /// Each promise's answer, in order: the names it was given, or its error.
    static func answers(_ promises: [Promise<[Item]>]) async -> [String] {
        var answers: [String] = []
        for promise in promises {
            switch await promise.result {
            case .success(let items): answers.append(items.map(\.name).joined())
            case .failure(let error): answers.append("\(error)")
            }
        }
        return answers
    }

    static func transportError(_ result: Result<some Any, any Error>) -> URLError? {
        guard case .failure(APIError.transportFailed(let failure)) = result else { return nil }
        return failure.underlying as? URLError
    }

    /// Six GETs in flight on the kept connection, and ``goAwayAtTheThird(of:answersFirst:closes:)``:
    /// the first three are answered once on it; the last three are sent again, once each, on
    /// new connections.
    @Test(arguments: [(false, false), (false, true), (true, true)])
    func aGoAwayInTheMiddleOfStreamsInFlight(answersFirst: Bool, closes: Bool) async throws {
        let count = 6
        let server = try Self.goAwayAtTheThird(of: count, answersFirst: answersFirst, closes: closes)
        let api = try Self.api(server)
        try await Self.warmUp(api, server)
        let answers = await Self.answers((0..<count).map { api.request(route: .get(server.url + "/item\($0)")) })
        let requests = server.requests
        let onFirst = requests.filter { $0.connection == 1 }.map(\.stream)
        #expect(onFirst.count == count + 1, "\(requests)")
        let last = onFirst.sorted()[3]
        let expectedOnFirst = Set(onFirst.filter { $0 > 1 && $0 <= last }.map { "c1s\($0)" })
        #expect(Set(answers.filter { $0.hasPrefix("c1") }) == expectedOnFirst, "\(answers)")
        #expect(answers.filter { $0.hasPrefix("c1") }.count == 3, "\(answers)")
        // The other three: each once more, on a connection past the first, answered there.
        let later = requests.filter { $0.connection > 1 }
        #expect(later.count == 3, "\(requests)")
        #expect(Set(answers.filter { !$0.hasPrefix("c1") }) == Set(later.map { "c\($0.connection)s\($0.stream)" }), "\(answers) \(requests)")
        #expect(requests.count == count + 1 + 3)
    }

    /// The same with POSTs, bodies that name them: those at or below the last stream are
    /// answered; those above fail as connection lost, never sent again.
    @Test func postsAboveTheLastStreamFailAndAreNotSentAgain() async throws {
        let count = 6
        let server = try Self.goAwayAtTheThird(of: count)
        let api = try Self.api(server)
        try await Self.warmUp(api, server)
        let promises: [Promise<[Item]>] = (0..<count).map {
            api.request(route: .post(server.url + "/item"), parameters: JSONParameters(["n": $0]))
        }
        var answered = 0
        var lost = 0
        for promise in promises {
            let result = await promise.result
            if case .success(let items) = result, items.count == 1, items[0].name.hasPrefix("c1s") {
                answered += 1
            } else if Self.transportError(result)?.code == .networkConnectionLost {
                lost += 1
            } else {
                Issue.record("\(result)")
            }
        }
        #expect(answered == 3 && lost == 3)
        let requests = server.requests
        #expect(requests.count == count + 1, "\(requests)")
        #expect(Set(requests.map(\.body)).count == count + 1)
        // libcurl retries a refused stream on a new connection, and only then finds that a
        // POST's body may not be read again: it may open one that carries nothing.
        #expect(requests.allSatisfy { $0.connection == 1 })
    }

    /// Every connection says GOAWAY (last stream: the one before) to every request: a GET goes
    /// out once on the kept connection, once on a new one, and fails there, typed; it is not
    /// sent a third time.
    @Test(arguments: [HTTPMethod.get, .head, .delete, .put, .post])
    func aServerThatSaysGoAwayToEverythingFailsTheRequestOnce(_ method: HTTPMethod) async throws {
        let server = try ScriptedHTTP2Server { request, connection in
            guard request.connection == 1, request.stream == 1 else { return connection.goAway(lastStream: request.stream > 2 ? request.stream - 2 : 0) }
            connection.answer(request.stream)
        }
        let api = try Self.api(server)
        try await Self.warmUp(api, server)
        let result = await (api.request(route: Route(method: method, url: server.url + "/again")) as Promise<Void>).result
        guard case .failure(APIError.transportFailed(let failure)) = result else {
            Issue.record("\(method): \(result)")
            return
        }
        #expect(failure.statusCode == nil)
        #expect(failure.underlying is URLError, "\(failure)")
        let sent = server.requests.count - 1
        if HTTPMethod.idempotent.contains(method) {
            #expect(sent == 2 && server.connections == 2, "\(method): \(server.requests)")
        } else {
            #expect(sent == 1 && server.connections == 1, "\(method): \(server.requests)")
            #expect((failure.underlying as? URLError)?.code == .networkConnectionLost, "\(failure)")
        }
    }

    /// What a transport's receiver hears of an exchange: its metrics and its end.
    final class Heard: TransportReceiver {
        let metrics = Recorder<TransferMetrics>()
        let ends = Recorder<String>()
        func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {}
        func didReceive(_ head: ResponseHead) -> TransferDecision { .proceed }
        func didReceive(_ chunk: Data) -> TransferDecision { .proceed }
        func didCollect(_ metrics: TransferMetrics) { self.metrics.append(metrics) }
        func didComplete(with error: (any Error)?) { ends.append(error.map { "\($0)" } ?? "ok") }
    }

    /// A PUT that crossed a GOAWAY on the kept connection, and again on the new one: it fails,
    /// once, and its metrics count the body it sent the second time. (The body is taken back to
    /// its start only once the loop has let it run again, `CurlExchange.useNewConnection()`.)
    @Test func aBodySentTwiceAndRefusedTwiceIsCountedAsSent() async throws {
        let server = try ScriptedHTTP2Server { request, connection in
            guard request.connection == 1, request.stream == 1 else { return connection.goAway(lastStream: request.stream > 2 ? request.stream - 2 : 0) }
            connection.answer(request.stream)
        }
        let transport = try CurlTransport(trusting: server.certificates.authority)
        try await Self.warmUp(AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: transport, responseQueue: .global()), server)
        var request = URLRequest(url: try #require(URL(string: server.url + "/again")))
        request.httpMethod = "PUT"
        request.httpBody = Data(repeating: 0x61, count: 5_000)
        let heard = Heard()
        let task = transport.send(TransportRequest(urlRequest: request), to: heard)
        #expect(await eventually(timeout: 30) { !heard.ends.items.isEmpty })
        withExtendedLifetime(task) {}
        #expect(heard.ends.items.count == 1 && heard.ends.items.first != "ok", "\(heard.ends.items)")
        #expect(heard.metrics.items.last?.bytesSent == 5_000, "\(heard.metrics.items)")
        #expect(server.requests.dropFirst().map(\.body.count) == [5_000, 5_000], "\(server.requests)")
    }

    /// The same server, closing each connection after its GOAWAY, and the API retrying as by
    /// default (twice, for these methods and connection lost): each attempt sends the GET at
    /// most twice, and the request fails, typed, after six sends at most.
    @Test(arguments: [false, true]) func aServerThatSaysGoAwayToEverythingUnderTheRetryPolicy(closes: Bool) async throws {
        let server = try ScriptedHTTP2Server { request, connection in
            guard request.connection == 1, request.stream == 1 else {
                connection.goAway(lastStream: request.stream > 2 ? request.stream - 2 : 0)
                if closes {
                    usleep(20_000)
                    connection.closes = true
                }
                return
            }
            connection.answer(request.stream)
        }
        let api = try Self.api(server, policy: RetryPolicy(maxRetries: 2, baseDelay: 0.01, jitter: false))
        try await Self.warmUp(api, server)
        let result = await (api.request(route: .get(server.url + "/again")) as Promise<[Item]>).result
        guard case .failure(APIError.transportFailed(let failure)) = result else {
            Issue.record("\(result)")
            return
        }
        #expect(failure.statusCode == nil)
        #expect(failure.underlying is URLError, "\(failure)")
        let sent = server.requests.count - 1
        #expect(sent >= 3 && sent <= 6, "\(server.requests)")
        // Nothing more once it has failed.
        try await Task.sleep(for: .milliseconds(200))
        #expect(server.requests.count == sent + 1)
    }

    /// The answer's HEADERS come, then a GOAWAY, and the connection closes before any DATA.
    /// When the GOAWAY's last stream is the request's (`covers`), a byte of the answer came
    /// from a server that took it: it is not sent again, and fails as connection lost. When the
    /// GOAWAY leaves the stream out, the server says it did not take it: it fails so, or is sent
    /// again once (libcurl can drop the refused stream's head before Tern reads it), and then
    /// the answer is the new connection's alone, no field of the first head in it.
    @Test(arguments: [HTTPMethod.get, .post], [true, false])
    func aGoAwayAfterTheHeadersBeforeTheBody(_ method: HTTPMethod, covers: Bool) async throws {
        let server = try ScriptedHTTP2Server { request, connection in
            guard request.connection == 1, request.stream > 1 else { return connection.answer(request.stream) }
            connection.headers(request.stream, endsStream: false, fields: [(31, "application/json"), (28, "17"), (27, "first")])
            connection.goAway(lastStream: covers ? request.stream : request.stream - 2)
            usleep(50_000)
            connection.closes = true
        }
        let api = try Self.api(server)
        try await Self.warmUp(api, server)
        let result = await (api.request(route: Route(method: method, url: server.url + "/halfway")) as Promise<Response>).result
        switch result {
        case .success(let response):
            #expect(method == .get && !covers, "\(method) covers \(covers): sent again")
            #expect(response.headers["Content-Language"] == nil && response.body == Data(#"[{"name":"c2s1"}]"#.utf8), "\(response.headers)")
            #expect(response.metrics.count == 1 && response.metrics.first?.reusedConnection == false)
            #expect(server.requests.count == 3 && server.connections == 2, "\(server.requests)")
        case .failure(APIError.transportFailed(let failure)):
            #expect(failure.statusCode == 200 || failure.statusCode == nil, "\(failure)")
            #expect((failure.underlying as? URLError).map { [.networkConnectionLost, .badServerResponse].contains($0.code) } == true, "\(failure)")
            if covers { #expect((failure.underlying as? URLError)?.code == .networkConnectionLost, "\(failure)") }
            #expect(server.requests.count == 2 && server.connections == 1, "\(server.requests)")
        case .failure(let error):
            Issue.record("\(method) covers \(covers): \(error)")
        }
    }

    /// A GOAWAY with an error (INTERNAL_ERROR) whose last stream covers the request, then the
    /// connection closed, unanswered: the server may have acted on it. A GET may be sent again
    /// (at most once, on a new connection) and then gets its answer; a POST is not sent again
    /// and fails, typed, with no status.
    @Test(arguments: [HTTPMethod.get, .post]) func aGoAwayWithAnErrorThatCoversTheRequestThenAClose(_ method: HTTPMethod) async throws {
        let server = try ScriptedHTTP2Server { request, connection in
            guard request.connection == 1, request.stream > 1 else { return connection.answer(request.stream) }
            connection.goAway(lastStream: request.stream, error: 2)
            usleep(50_000)
            connection.closes = true
        }
        let api = try Self.api(server)
        try await Self.warmUp(api, server)
        let result = await (api.request(route: Route(method: method, url: server.url + "/covered")) as Promise<[Item]>).result
        switch result {
        case .success(let items):
            #expect(method != .post, "\(items)")
            #expect(items.count == 1 && items[0].name.hasPrefix("c2s"), "\(items)")
            #expect(server.requests.count == 3 && server.connections == 2, "\(server.requests)")
        case .failure(APIError.transportFailed(let failure)):
            #expect(failure.statusCode == nil)
            #expect((failure.underlying as? URLError)?.code == .networkConnectionLost, "\(failure)")
            #expect(server.requests.count == 2, "\(method): \(server.requests)")
        case .failure(let error):
            Issue.record("\(method): \(error)")
        }
    }
    /// A PUT or DELETE with a body that crossed a GOAWAY on the kept connection (its stream past
    /// the GOAWAY's last, the connection left open) is sent again on a new connection, its body
    /// read again from the start, whether the GOAWAY reached it as a refused stream (libcurl's
    /// own retry) or as `CURLE_HTTP2` (Tern's, `CurlExchange.mayRunAgain(after:)`). Before
    /// 1fd2ed3 it failed as "not sent again unasked".
    @Test(arguments: [HTTPMethod.put, .delete]) func anIdempotentRequestWithABodyThatCrossedAGoAwayIsSentAgainWhole(_ method: HTTPMethod) async throws {
        let server = try ScriptedHTTP2Server { request, connection in
            guard request.connection == 1, request.stream > 1 else { return connection.answer(request.stream) }
            connection.goAway(lastStream: request.stream - 2)
        }
        let api = try Self.api(server)
        try await Self.warmUp(api, server)
        let body = Data("the whole body".utf8)
        let result = await (api.request(route: Route(method: method, url: server.url + "/item"), parameters: BodyParameters(body))
                            as Promise<[Item]>).result
        let requests = server.requests
        #expect((try? result.get()) == [Item(name: "c2s1")], "\(method): \(result)")
        #expect(requests.count == 3, "\(requests)")
        if requests.count == 3 { #expect(requests[2].body == body && requests[2].connection == 2) }
    }

    struct RemakeRefused: Error {}

    /// A PUT whose body is read from a stream crosses a GOAWAY on the kept connection: the body is
    /// made again from its start and sent whole on the new connection; or, when the stream
    /// cannot be made again, the request fails with why, once, and goes no further.
    @Test(arguments: [true, false]) func aStreamBodyThatCrossedAGoAway(remakes: Bool) async throws {
        let server = try ScriptedHTTP2Server { request, connection in
            guard request.connection == 1, request.stream > 1 else { return connection.answer(request.stream) }
            connection.goAway(lastStream: request.stream - 2)
        }
        let api = try Self.api(server)
        try await Self.warmUp(api, server)
        let body = Data((0..<6_000).map { UInt8($0 % 251) })
        let made = Locked(0)
        let parameters = BodyParameters(length: Int64(body.count)) {
            let count = made.withLock { made in
                made += 1
                return made
            }
            guard remakes || count == 1 else { throw RemakeRefused() }
            return InputStream(data: body)
        }
        let result = await (api.request(route: .put(server.url + "/item"), parameters: parameters) as Promise<[Item]>).result
        let requests = server.requests
        if remakes {
            #expect((try? result.get()) == [Item(name: "c2s1")], "\(result)")
            #expect(requests.dropFirst().map(\.body) == [body, body] && requests.last?.connection == 2, "\(requests)")
        } else {
            guard case .failure(let error) = result else {
                Issue.record("\(result)")
                return
            }
            #expect("\(error)".contains("RemakeRefused"), "\(error)")
            #expect(requests.count == 2 && server.connections == 1, "\(requests)")
        }
        #expect(made.withLock { $0 } == 2)
    }

    /// Six PUTs with bodies that name them in flight on the kept connection; a GOAWAY with the
    /// third's stream as the last: the last three go again once each, their whole bodies read
    /// again, on new connections, however the GOAWAY reached each.
    @Test func putsWithBodiesAboveTheLastStreamAreSentAgainWhole() async throws {
        let count = 6
        let server = try Self.goAwayAtTheThird(of: count)
        let api = try Self.api(server)
        try await Self.warmUp(api, server)
        let bodies = (0..<count).map { Data("body \($0) ".utf8) + Data(repeating: UInt8(65 + $0), count: 2_000) }
        let answers = await Self.answers(bodies.map { api.request(route: .put(server.url + "/item"), parameters: BodyParameters($0)) })
        let requests = server.requests
        #expect(answers.filter { $0.hasPrefix("c1s") }.count == 3 && answers.filter { $0.hasPrefix("c") && !$0.hasPrefix("c1s") }.count == 3, "\(answers)")
        #expect(requests.count == count + 1 + 3, "\(requests)")
        // Each body whole, once on the first connection; the three sent again whole, once more.
        let onFirst = requests.filter { $0.connection == 1 && $0.stream > 1 }.map(\.body)
        let later = requests.filter { $0.connection > 1 }.map(\.body)
        #expect(Set(onFirst) == Set(bodies) && onFirst.count == count)
        #expect(Set(later).count == 3 && Set(later).isSubset(of: Set(bodies)), "\(later.map(\.count))")
    }

    enum Crossing: String, CaseIterable, Sendable {
        case head, stream, download, revalidation
    }

    /// A HEAD, a stream, a download and a cache's revalidation each cross a GOAWAY that leaves
    /// their stream out, on the kept connection: each goes again once, on a new connection,
    /// and what the caller gets is that answer alone.
    @Test(arguments: Crossing.allCases) func aRequestOfEachKindThatCrossedAGoAway(_ kind: Crossing) async throws {
        let body = Data(#"[{"name":"again"}]"#.utf8)
        let server = try ScriptedHTTP2Server { request, connection in
            switch (request.connection, request.stream) {
            case (1, 1):
                // What the cache keeps: a body it must revalidate each time, with its tag.
                connection.headers(1, endsStream: false, fields: [(31, "application/json"), (28, String(body.count)), (24, "no-cache"), (34, "\"v1\"")])
                connection.send(.data, 0x1, 1, body)
            case (1, _):
                connection.goAway(lastStream: request.stream - 2)
            default:
                switch kind {
                case .head: connection.headers(request.stream, endsStream: true, fields: [(28, "1234")])
                case .revalidation: connection.headers(request.stream, endsStream: true, fields: [(34, "\"v1\"")], status: 0x8b)   // 304
                case .stream, .download: connection.answer(request.stream)
                }
            }
        }
        let cache = HTTPCache()
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never, cache: kind == .revalidation ? cache : nil),
                              transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
        if kind == .stream {
            // Streams have a loop of their own, with connections of its own.
            var bytes = Data()
            for try await chunk in api.stream(route: .get(server.url + "/item")) { bytes.append(chunk) }
            #expect(bytes == body)
        } else {
            let first: [Item] = try await api.request(route: .get(server.url + "/item")).value
            #expect(first == [Item(name: "again")])
        }
        switch kind {
        case .head:
            let response: Response = try await api.request(route: .head(server.url + "/item")).value
            #expect(response.statusCode == 200 && response.body.isEmpty && response.headers["Content-Length"] == "1234")
        case .stream:
            var bytes = Data()
            for try await chunk in api.stream(route: .get(server.url + "/item")) { bytes.append(chunk) }
            #expect(String(decoding: bytes, as: UTF8.self) == #"[{"name":"c2s1"}]"#)
        case .download:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-goaway-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let file = try await api.download(route: .get(server.url + "/item"), to: directory.appendingPathComponent("file.json")).value
            #expect(FileManager.default.contents(atPath: file.fileURL.path) == Data(#"[{"name":"c2s1"}]"#.utf8))
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["file.json"])
        case .revalidation:
            let response: Response = try await api.request(route: .get(server.url + "/item")).value
            #expect(response.cacheOutcome == .revalidated)
            #expect(response.body == body)
        }
        let requests = server.requests
        #expect(requests.count == 3 && requests[2].connection == 2 && server.connections == 2, "\(kind): \(requests)")
    }
}
#endif
