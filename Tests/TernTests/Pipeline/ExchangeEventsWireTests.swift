import Foundation
import Testing
@testable import Tern
import TernTesting

/// An exchange's events (head, held chunks while the head is judged, end, task attach, owed) as
/// real servers that misbehave produce them, read into memory, a file and a stream, the stream's
/// head judged on the transport's thread or by the app's code elsewhere: one settlement, the
/// right bytes or a typed APIError, the API let go.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ExchangeEventsWireTests: EarlyAnswerAttack {
    static let text = "alpha\nbeta\ngamma\n"

    /// A server whose every connection answers each request with `answer`.
    static func server(_ answer: @escaping @Sendable (RawServer.Connection, String) -> Void) throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() { answer(connection, request) }
        }
    }

    /// Reads `url` as `reading` says with a new API over the transport under test, and checks
    /// that the API is let go once the reading has ended.
    static func reading(_ reading: Reading, _ url: String, configuration: APIConfiguration? = nil,
                        sourceLocation: SourceLocation = #_sourceLocation) async throws -> Result<String, APIError>? {
        let apiGone: WeakRef<AbstractAPI>
        let result: Result<String, APIError>?
        do {
            let api = AbstractAPI(configuration: configuration ?? Self.configuration(reading), transport: TestTransport.make(), responseQueue: .global())
            apiGone = WeakRef(api)
            result = try await inDirectory { try await read(reading, from: api, url: url, in: $0) }
        }
        #expect(result != nil, "no end within 10 s", sourceLocation: sourceLocation)
        #expect(await eventually(timeout: 10) { apiGone.isFreed }, "the API outlived its request", sourceLocation: sourceLocation)
        return result
    }

    /// Whether `result` is ``text``, whole; records what came otherwise.
    static func expectText(_ result: Result<String, APIError>?, sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .success(let body)? = result else {
            Issue.record("\(String(describing: result))", sourceLocation: sourceLocation)
            return
        }
        #expect(body == text, sourceLocation: sourceLocation)
    }

    enum Framing: String, Sendable, CaseIterable { case length, chunked }

    /// A body a byte at a time, with pauses, framed by its length or in chunks of one byte.
    @Test(arguments: Reading.allCases, Framing.allCases)
    func aBodyByteByByteArrivesWhole(reading: Reading, framing: Framing) async throws {
        let server = try Self.server { connection, _ in
            let length = framing == .length ? "Content-Length: \(Self.text.utf8.count)" : "Transfer-Encoding: chunked"
            guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\(length)\r\n\r\n") else { return }
            for byte in Self.text.utf8 {
                connection.pause(2)
                guard framing == .length ? connection.send([byte]) : connection.send(Array("1\r\n".utf8) + [byte] + Array("\r\n".utf8)) else { return }
            }
            if framing == .chunked { connection.send("0\r\n\r\n") }
        }
        defer { server.stop() }
        Self.expectText(try await Self.reading(reading, server.baseURL + "/bytes"))
    }

    /// A stream whose head the app's code judges slowly while the whole body, and its end,
    /// arrive a byte at a time: what was held comes out whole and in order, once.
    @Test(arguments: Framing.allCases)
    func bytesHeldWhileTheAppJudgesTheHeadComeOutInOrder(framing: Framing) async throws {
        let server = try Self.server { connection, _ in
            let length = framing == .length ? "Content-Length: \(Self.text.utf8.count)" : "Transfer-Encoding: chunked"
            guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\(length)\r\n\r\n") else { return }
            for byte in Self.text.utf8 {
                guard framing == .length ? connection.send([byte]) : connection.send(Array("1\r\n".utf8) + [byte] + Array("\r\n".utf8)) else { return }
            }
            if framing == .chunked { connection.send("0\r\n\r\n") }
        }
        defer { server.stop() }
        let judged = Recorder<Int>()
        let slow = Validation.custom { response in
            judged.append(response.statusCode)
            usleep(150_000)
            return true
        }
        let configuration = APIConfiguration(timeout: 10, validation: slow, retryPolicy: .never)
        Self.expectText(try await Self.reading(.stream, server.baseURL + "/held", configuration: configuration))
        #expect(judged.items == [200])
    }

    /// The app's code refuses the head while the body arrives: the stream fails typed, once,
    /// with nothing of the body read.
    @Test func aHeadRefusedWhileItsBodyArrivesFailsTheStreamTyped() async throws {
        let server = try Self.server { connection, _ in
            connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(Self.text.utf8.count)\r\n\r\n")
            for byte in Self.text.utf8 { connection.send([byte]) }
        }
        defer { server.stop() }
        let refuse = Validation.custom { _ in
            usleep(100_000)
            return false
        }
        let configuration = APIConfiguration(timeout: 10, validation: refuse, retryPolicy: .never)
        let result = try await Self.reading(.stream, server.baseURL + "/refused", configuration: configuration)
        guard case .failure(.unacceptableStatus)? = result else {
            Issue.record("\(String(describing: result))")
            return
        }
    }

    /// The connection closes mid-body while the app's code judges the head: the stream ends
    /// with a typed failure after what came, never with the text cut short as if whole.
    @Test(arguments: Framing.allCases)
    func aConnectionClosedMidBodyWhileTheHeadIsJudged(framing: Framing) async throws {
        let server = try Self.server { connection, _ in
            let length = framing == .length ? "Content-Length: 1000" : "Transfer-Encoding: chunked"
            connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\(length)\r\n\r\n")
            connection.send(framing == .length ? "alpha\n" : "6\r\nalpha\n\r\n")
            connection.pause(20)
            shutdown(connection.socket, Int32(SHUT_RDWR))
        }
        defer { server.stop() }
        for reading in Reading.allCases {
            let slow = Validation.custom { _ in
                usleep(100_000)
                return true
            }
            let configuration = APIConfiguration(timeout: 10, validation: slow, retryPolicy: .never)
            let result = try await Self.reading(reading, server.baseURL + "/cut", configuration: configuration)
            guard case .failure(.transportFailed)? = result else {
                Issue.record("\(reading): \(String(describing: result))")
                continue
            }
        }
    }

    /// Responses that may have no body, sent with one: the request settles as if none came,
    /// and the next request on the connection gets its own answer or fails typed, never the
    /// stray bytes.
    @Test(arguments: [("HEAD", "200 OK"), ("GET", "204 No Content"), ("GET", "304 Not Modified")])
    func aBodyWhereNoneMayBe(method: String, status: String) async throws {
        let server = try Self.server { connection, request in
            if request.hasPrefix("GET /next") {
                connection.send(RawServer.Connection.response("next"))
            } else {
                connection.send("HTTP/1.1 \(status)\r\nContent-Length: 5\r\n\r\nhello")
            }
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        let first = await Self.results(of: api.request(route: Route(method: HTTPMethod(rawValue: method), url: "/first")) as Promise<Data>)
        #expect(first.count == 1)
        switch first.first {
        case .success(let body)?: #expect(body.isEmpty, "read \(String(decoding: body, as: UTF8.self))")
        case .failure(APIError.unacceptableStatus(let failure))?: #expect(status.hasPrefix("304") && failure.statusCode == 304)
        case let other: Issue.record("\(String(describing: other))")
        }
        let next = await Self.results(of: api.request(route: .get("/next")) as Promise<String>)
        #expect(next.count == 1)
        switch next.first {
        case .success(let text)?: #expect(text == "next")
        case .failure(let error as APIError)?: #expect(error.caseName == "transportFailed", "\(error)")
        case let other: Issue.record("\(String(describing: other))")
        }
    }

    /// A `Content-Length` shorter than the body: the declared bytes are the body; the rest is
    /// never read as the next answer.
    @Test func aLengthShorterThanTheBody() async throws {
        let server = try Self.server { connection, request in
            connection.send(request.hasPrefix("GET /next") ? RawServer.Connection.response("next")
                                                           : "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil")
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        #expect(try await (api.request(route: .get("/short")) as Promise<String>).value == "ok")
        let next = await Self.results(of: api.request(route: .get("/next")) as Promise<String>)
        #expect(next.count == 1)
        switch next.first {
        case .success(let text)?: #expect(text == "next", "the stray bytes were read as the next answer")
        case .failure(let error as APIError)?: #expect(error.caseName == "transportFailed", "\(error)")
        case let other: Issue.record("\(String(describing: other))")
        }
    }

    /// A `Content-Length` longer than the body, then the connection closes (or falls silent):
    /// a typed failure for every reading, never the short body as if whole.
    @Test(arguments: Reading.allCases, [false, true])
    func aLengthLongerThanTheBody(reading: Reading, stalls: Bool) async throws {
        let server = try Self.server { connection, _ in
            connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n\(Self.text)")
            if stalls { _ = connection.readAvailable(for: 5) }
            shutdown(connection.socket, Int32(SHUT_RDWR))
        }
        defer { server.stop() }
        // 1 s for the silence to end in; time enough, however busy the machine, for the close.
        let configuration = APIConfiguration(timeout: stalls ? 1 : 10, retryPolicy: .never, plugins: reading == .streamWithPlugin ? [Watching()] : [])
        let result = try await Self.reading(reading, server.baseURL + "/long", configuration: configuration)
        switch result {
        case .failure(.transportFailed)?: break
        case .failure(.timeout)? where stalls: break
        default: Issue.record("\(String(describing: result))")
        }
    }

    /// Chunk sizes that are no chunk sizes: a typed failure, or the right body where the size
    /// is valid after all (an extension); never a wrong body.
    @Test(arguments: ["zz", "-5", "FFFFFFFFFFFFFFFFFFFF", "0x5", "5;name=value", "5 ", "", "8"])
    func aChunkSizeThatLies(size: String) async throws {
        let server = try Self.server { connection, _ in
            connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\nhello\r\n0\r\n\r\n")
            connection.pause(50)
            shutdown(connection.socket, Int32(SHUT_RDWR))
        }
        defer { server.stop() }
        for reading in [Reading.request, .download, .stream] {
            let result = try await Self.reading(reading, server.baseURL + "/chunks",
                                                configuration: APIConfiguration(timeout: 5, retryPolicy: .never))
            switch result {
            case .success(let body)?: #expect(body == "hello", "\(reading): read \(body.debugDescription) from size \(size.debugDescription)")
            case .failure(.transportFailed)?: break
            default: Issue.record("\(reading): \(String(describing: result))")
            }
        }
    }

    /// The response size limit and a download's `maximumSize` against a body that declares its
    /// length and one that comes in small chunks: `responseTooLarge`, and no file left.
    @Test(arguments: Framing.allCases)
    func aBodyOverTheLimitStopsTyped(framing: Framing) async throws {
        let body = String(repeating: "x", count: 5_000)
        let server = try Self.server { connection, _ in
            let length = framing == .length ? "Content-Length: \(body.utf8.count)" : "Transfer-Encoding: chunked"
            guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\(length)\r\n\r\n") else { return }
            for _ in stride(from: 0, to: body.utf8.count, by: 100) {
                let piece = String(repeating: "x", count: 100)
                guard connection.send(framing == .length ? piece : "64\r\n\(piece)\r\n") else { return }
            }
            if framing == .chunked { connection.send("0\r\n\r\n") }
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(maximumResponseSize: SizeLimit(bytes: 1_000), retryPolicy: .never))
        let memory = await tooLarge(api.request(route: .get("/big")) as Promise<Data>)
        #expect(memory?.limit == 1_000)
        try await Self.inDirectory { directory in
            let destination = directory.appendingPathComponent("big")
            let file = await tooLarge(api.download(route: .get("/big"), to: destination, maximumSize: SizeLimit(bytes: 2_000)))
            #expect(file?.limit == 2_000)
            #expect(!FileManager.default.fileExists(atPath: destination.path))
        }
    }
}
