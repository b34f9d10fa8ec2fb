#if os(Linux)
import Foundation
import Testing
@testable import Tern
import TernTesting

/// Response heads and chunked bodies that lie in their framing, from a raw socket, crossed with
/// what reads their fields: a `Location` given twice, NUL bytes in a field's name or value
/// (in a `Content-Length`, a `Location`, a `Set-Cookie`), negative lengths, chunk sizes
/// signed, in hex's clothing, padded to overflow or shorter than their data, trailers that name
/// a freshness, a type and a cookie, and interim heads with bodies or cookies. Over each
/// transport: answered as meant, or failed typed; never a body cut to a lie, a trailer
/// obeyed, or a redirect to a URL no field named; the next request gets its own answer.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct FramingLieAttackTests {
    /// A server answering `/hostile` with `head`, then `body`, and anything else with its
    /// path (and `+cookie` when the request carried one); it keeps each request's head.
    static func server(head: String, body: String = "hello", requests: Recorder<String>? = nil) throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                requests?.append(request)
                let target = String(request.split(separator: " ")[1])
                let cookie = request.contains("\r\nCookie:") ? "+cookie" : ""
                connection.send(target == "/hostile" ? head + "\r\n\r\n" + body : RawServer.Connection.response(target + cookie))
            }
        }
    }

    static func api(cache: HTTPCache? = nil) throws -> TestAPI {
        try TestAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, cache: cache))
    }

    /// Expects `result` to be a transport failure, and `next` answered at `/next`.
    static func expectFailedTyped(_ result: Result<some Any, any Error>, then api: TestAPI, at server: RawServer,
                                  sourceLocation: SourceLocation = #_sourceLocation) async throws {
        guard case .failure(APIError.transportFailed(let failure)) = result else {
            Issue.record("expected transportFailed, got \(result)", sourceLocation: sourceLocation)
            return
        }
        #expect(failure.urlError != nil, "\(failure)", sourceLocation: sourceLocation)
        let next: String = try await api.request(route: .get(server.baseURL + "/next")).value
        #expect(next == "/next", sourceLocation: sourceLocation)
    }

    /// The same `Location` twice: RFC 9110 gives a redirect one. libcurl's head was read with
    /// the two joined, "/next, /next", and the redirect followed to `/next,%20/next`, a URL the
    /// server never named; now it goes to `/next`. FoundationNetworking joins two fields of one
    /// spelling before Tern sees them, and Tern refuses that head, typed (of two spellings it
    /// keeps one).
    @Test(arguments: ["Location", "location"])
    func aLocationGivenTwiceLeadsWhereItSaysOrNowhere(secondName: String) async throws {
        let requests = Recorder<String>()
        let server = try Self.server(head: "HTTP/1.1 302 Found\r\nLocation: /next\r\n\(secondName): /next\r\nContent-Length: 5", requests: requests)
        defer { server.stop() }
        let api = try Self.api()
        let result = await (api.request(route: .get(server.baseURL + "/hostile")) as Promise<String>).result
        if TestTransport.isCurl || secondName != "Location" {
            #expect((try? result.get()) == "/next", "\(result)")
        } else {
            guard case .failure(APIError.transportFailed(let failure)) = result else { Issue.record("\(result)"); return }
            #expect(failure.urlError?.code == .badServerResponse, "\(failure)")
        }
        #expect(requests.items.allSatisfy { $0.hasPrefix("GET /hostile ") || $0.hasPrefix("GET /next ") }, "\(requests.items.map { $0.prefix(30) })")
    }

    /// NUL in a field's name or value (RFC 9110 §5.5: reject the message or replace it with a
    /// space; a C string ends there): in a `Content-Length` it would cut the length short, in a
    /// `Location` or `Content-Type` the URL or type, in a `Set-Cookie` the cookie's attributes.
    static let nulHeads = [
        "HTTP/1.1 200 OK\r\nContent-Length: 2\0\r\nX: y",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\0 7",
        "HTTP/1.1 200 OK\r\nX\0Content-Length: 2\r\nContent-Length: 5",
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\0application/json\r\nContent-Length: 5",
        "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\0; Path=/; Domain=example.com\r\nContent-Length: 5",
        "HTTP/1.1 302 Found\r\nLocation: /next\0/../evil\r\nContent-Length: 5",
    ]

    @Test(arguments: nulHeads)
    func aNulInAFieldFailsTyped(head: String) async throws {
        let requests = Recorder<String>()
        let server = try Self.server(head: head, requests: requests)
        defer { server.stop() }
        let api = try Self.api()
        try await Self.expectFailedTyped(await (api.request(route: .get(server.baseURL + "/hostile")) as Promise<String>).result, then: api, at: server)
        #expect(api.cookieJar?.all.isEmpty == true)
        #expect(!requests.items.contains { $0.contains("evil") })
    }

    /// Lengths below zero, and chunk sizes that are no hex number as RFC 9112 writes one
    /// (signed, `0x`, a space before, more digits than 64 bits hold, with leading zeros or not),
    /// or shorter than the data after them: failed typed, none of the body taken for the
    /// whole of it.
    static let lyingFrames: [(head: String, body: String)] = [
        ("HTTP/1.1 200 OK\r\nContent-Length: -1", "hello"),
        ("HTTP/1.1 200 OK\r\nContent-Length: -5", "hello"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: -5", "hello"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked", "+5\r\nhello\r\n0\r\n\r\n"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked", "-5\r\nhello\r\n0\r\n\r\n"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked", "0x5\r\nhello\r\n0\r\n\r\n"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked", " 5\r\nhello\r\n0\r\n\r\n"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked", "0000000000000000000000005\r\nhello\r\n0\r\n\r\n"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked", "10000000000000005\r\nhello\r\n0\r\n\r\n"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked", "3\r\nhello\r\n0\r\n\r\n"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked", "5\r\nhelloXX0\r\n\r\n"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked", "5;a=\"\r\n\"\r\nhello\r\n0\r\n\r\n"),
        // An interim head has no body: bytes after it are no status line.
        ("HTTP/1.1 103 Early Hints\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\nContent-Length: 5", "hello"),
    ]

    @Test(arguments: lyingFrames.indices)
    func aFrameThatLiesFailsTyped(index: Int) async throws {
        let (head, body) = Self.lyingFrames[index]
        let server = try Self.server(head: head, body: body)
        defer { server.stop() }
        let api = try Self.api()
        try await Self.expectFailedTyped(await (api.request(route: .get(server.baseURL + "/hostile")) as Promise<String>).result, then: api, at: server)
    }

    /// Trailers after the last chunk that name a freshness, a type and a cookie: the head says
    /// `no-store` and `text/plain`, and that is the answer's, each time it is asked for (nothing
    /// kept); the jar stays empty. Trailers whose lines are folded or extended are read past.
    @Test(.enabled(if: TestTransport.survivesTrailers, "FoundationNetworking ends the process on trailers"),
          arguments: ["0\r\nCache-Control: max-age=600\r\nContent-Type: application/json\r\nSet-Cookie: planted=1; Path=/\r\n\r\n",
                      "0;ext=1\r\nCache-Control: max-age=600\r\n folded: x\r\nContent-Type: application/json\r\n\r\n"])
    func trailersAreNotObeyed(trailers: String) async throws {
        let requests = Recorder<String>()
        let server = try Self.server(head: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nCache-Control: no-store\r\nTransfer-Encoding: chunked",
                                     body: "5\r\nhello\r\n" + trailers, requests: requests)
        defer { server.stop() }
        let api = try Self.api(cache: HTTPCache())
        for _ in 0..<2 {
            let response: Response = try await api.request(route: .get(server.baseURL + "/hostile")).value
            #expect(String(decoding: response.body, as: UTF8.self) == "hello")
            #expect(response.headers["Content-Type"] == "text/plain" && response.headers["Cache-Control"] == "no-store", "\(response.headers)")
        }
        #expect(requests.items.count == 2)
        #expect(api.cookieJar?.all.isEmpty == true)
        let next: String = try await api.request(route: .get(server.baseURL + "/next")).value
        #expect(next == "/next")
    }

    /// Three `103 Early Hints` carrying `Set-Cookie` and `Link`, before an answer and before an
    /// event stream: over libcurl the final head is the answer, its cookie kept and none of
    /// theirs; FoundationNetworking takes the first for the answer and fails, typed.
    @Test(arguments: [false, true])
    func earlyHintsCarryNoCookie(eventStream: Bool) async throws {
        let hints = (1...3).map { "HTTP/1.1 103 Early Hints\r\nLink: </s\($0).css>; rel=preload\r\nSet-Cookie: early\($0)=1; Path=/\r\n\r\n" }.joined()
        let body = eventStream ? "data: one\n\n" : "hello"
        let server = try Self.server(head: hints + "HTTP/1.1 200 OK\r\nContent-Type: \(eventStream ? "text/event-stream" : "text/plain")\r\n"
                                         + "Set-Cookie: final=1; Path=/\r\nContent-Length: \(body.utf8.count)", body: body)
        defer { server.stop() }
        let api = try Self.api()
        do {
            if eventStream {
                var events: [String] = []
                for try await event in api.stream(route: .get(server.baseURL + "/hostile")).events { events.append(event.data) }
                #expect(events == ["one"])
            } else {
                let response: Response = try await api.request(route: .get(server.baseURL + "/hostile")).value
                #expect(String(decoding: response.body, as: UTF8.self) == "hello" && response.headers["Link"] == nil, "\(response.headers)")
            }
            #expect(TestTransport.isCurl)
            #expect(api.cookieJar?.all.map(\.name) == ["final"], "\(api.cookieJar?.all ?? [])")
        } catch let error as APIError {
            #expect(!TestTransport.isCurl, "\(error)")
            guard case .transportFailed = error else { Issue.record("expected transportFailed, got \(error)"); return }
            #expect(api.cookieJar?.all.contains { $0.name.hasPrefix("early") } != true, "\(api.cookieJar?.all ?? [])")
        }
    }

    /// Heads refused as untrustworthy that carry a `Set-Cookie` before (or after) the lie: no
    /// answer came, and the jar keeps nothing of it; the next request carries no cookie.
    static let refusedWithCookies = [
        "HTTP/1.1 200 OK\r\nSet-Cookie: planted=1; Path=/\r\nContent-Length: 5\r\nContent-Length: 30",
        "HTTP/1.1 200 OK\r\nSet-Cookie: planted=1; Path=/\r\nContent-Length: 5\r\nTransfer-Encoding: chunked",
        "HTTP/1.1 200 OK\r\nContent-Length: -5\r\nSet-Cookie: planted=1; Path=/",
        "HTTP/1.1 200 OK\r\nSet-Cookie: planted=1; Path=/\r\nX: a\0b\r\nContent-Length: 5",
        "HTTP/1.1 101 Switching Protocols\r\nSet-Cookie: planted=1; Path=/\r\nUpgrade: websocket\r\nConnection: Upgrade",
        "HTTP/1.1 302 Found\r\nSet-Cookie: planted=1; Path=/\r\nLocation: /a\r\nLocation: /b\r\nContent-Length: 5",
    ]

    @Test(arguments: refusedWithCookies)
    func aRefusedHeadSetsNoCookie(head: String) async throws {
        let server = try Self.server(head: head)
        defer { server.stop() }
        let api = try Self.api()
        try await Self.expectFailedTyped(await (api.request(route: .get(server.baseURL + "/hostile")) as Promise<String>).result, then: api, at: server)
        #expect(api.cookieJar?.all.isEmpty == true, "\(api.cookieJar?.all ?? [])")
    }

    /// An event stream, gzipped, whose compressed stream is cut inside its second event (the
    /// framing whole): the first event is read, the second, never finished, is not made an
    /// event, whether the transport sees the cut (libcurl, through Tern: a typed error) or not
    /// (FoundationNetworking: the stream just ends).
    @Test func anEventCutInsideItsCompressedStreamIsNotDispatched() async throws {
        let events = Data("data: first\n\ndata: second, never ended\n".utf8) + Data(repeating: 0x61, count: 5_000)
        let gzip = GzipStream.stored(events)
        let cut = gzip.prefix(gzip.count - 2_000)
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            connection.send(Array("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nContent-Length: \(cut.count)\r\n\r\n".utf8) + [UInt8](cut))
        }
        defer { server.stop() }
        var seen: [String] = []
        do {
            for try await event in try Self.api().stream(route: .get(server.baseURL + "/events")).events { seen.append(event.data) }
            #expect(!TestTransport.isCurl, "a cut compressed stream ended without an error")
        } catch let error as APIError {
            guard case .transportFailed(let failure) = error else { Issue.record("expected transportFailed, got \(error)"); return }
            #expect(failure.urlError?.code == .cannotDecodeContentData, "\(failure)")
        }
        #expect(seen == ["first"])
    }

    /// Heads HTTP allows that FoundationNetworking's parser does not: a field with no space after
    /// its colon (RFC 9112's whitespace there is optional), a value of spaces alone, a status
    /// line without its reason's space. Over libcurl each is answered; over URLSession the request
    /// fails typed (FoundationNetworking's header callback refuses the line: "Failed writing
    /// header"), as the Linux article says; never a hang, and the next request is answered.
    static let lawfulButOdd = [
        "HTTP/1.1 200 OK\r\nContent-Type:text/plain\r\nContent-Length: 5",
        "HTTP/1.1 200 OK\r\nX-Note:1\r\nContent-Length: 5",
        "HTTP/1.1 200 OK\r\nX-Note:  \r\nContent-Length: 5",
        "HTTP/1.1 200\r\nContent-Length: 5",
    ]

    @Test(arguments: lawfulButOdd)
    func aLawfulHeadFoundationNetworkingCannotParse(head: String) async throws {
        let server = try Self.server(head: head)
        defer { server.stop() }
        let api = try Self.api()
        let result = await (api.request(route: .get(server.baseURL + "/hostile")) as Promise<String>).result
        if TestTransport.isCurl {
            #expect((try? result.get()) == "hello", "\(result)")
            let next: String = try await api.request(route: .get(server.baseURL + "/next")).value
            #expect(next == "/next")
        } else {
            try await Self.expectFailedTyped(result, then: api, at: server)
        }
    }
}
#endif
