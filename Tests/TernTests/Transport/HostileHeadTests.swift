#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if os(Linux)
import Foundation
import Testing
import Tern

/// Response heads over libcurl that frame a body two ways, or are no HTTP at all: each fails at
/// once with a typed error that says why, and the connection goes with it.
// Each test but the exit tests has a time limit: an exit test waits its turn behind the others.
@Suite(.onTestThreads) struct HostileHeadTests {
    /// A server answering `/hostile` with `head` (and `body`), and anything else with its name.
    static func server(head: String, body: String = "hello") throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let name = ConnectionReuseTests.name(of: request)
                connection.send(name == "hostile" ? head + "\r\n\r\n" + body : RawServer.Connection.response(name))
            }
        }
    }

    /// A long timeout: the failures must be the typed errors, not it.
    func api(over transport: (any Transport)? = nil) throws -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 120, retryPolicy: .never), transport: try transport ?? CurlTransport(),
                    responseQueue: .global())
    }

    /// Expects `server`'s hostile answer to fail over `api` as a response that cannot be trusted.
    func expectRefused(by server: RawServer, over api: AbstractAPI) async {
        await expectRefused(at: server.baseURL + "/hostile", over: api)
    }

    /// Expects the answer at `url` to fail over `api` as a response that cannot be trusted.
    func expectRefused(at url: String, over api: AbstractAPI) async {
        let error = await apiError(of: api.request(route: .get(url)) as Promise<String>)
        guard case .transportFailed(let failure)? = error else {
            Issue.record("expected transportFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.urlError?.code == .badServerResponse)
        #expect("\(failure)".contains("cannot be trusted"), "\(failure)")
    }

    /// Expects `head` (then `body`) refused over `transport` (libcurl unless given), and the
    /// next request answered on a connection of its own.
    func expectRefusedAndTheNextAnswered(head: String, body: String = "hello", over transport: (any Transport)? = nil) async throws {
        let server = try Self.server(head: head, body: body)
        defer { server.stop() }
        let api = try api(over: transport)
        await expectRefused(by: server, over: api)
        let next: String = try await api.request(route: .get(server.baseURL + "/next")).value
        #expect(next == "next")
    }

    static let untrustworthy = [
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 30",
        "HTTP/1.1 200 OK\r\nContent-Length: 5, 30",
        "HTTP/1.1 200 OK\r\nContent-Length: +5",
        "HTTP/1.1 200 OK\r\nContent-Length: 0x5",
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked",
        "HTTP/1.1 200 OK\r\nContent-Length : 5",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding\t: chunked",
        "http/1.1 200 OK\r\nContent-Length: 5",
        "HTTP/1.1 2000 OK\r\nContent-Length: 5",
        "HTTP/1.1 302 Found\r\nLocation: /a\r\nLocation: /b\r\nContent-Length: 5",
        // A transfer coding nobody asked for (TE), which no transport undoes: the body would come
        // compressed, as the answer.
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: br",
        // Another protocol from here on, unasked; no HTTP answer may ever come.
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade",
    ]

    @Test(.timeLimit(.minutes(2)), arguments: untrustworthy)
    func aHeadThatFramesItsBodyTwoWaysFailsAtOnce(head: String) async throws {
        try await expectRefusedAndTheNextAnswered(head: head)
    }

    /// A carriage return that does not end a line: libcurl keeps it in the line, so the
    /// length after it was no field, and it read "hello" to the connection's close (or waited
    /// for it); a reader taking it for a line's end frames two bytes. Read neither way: refused.
    @Test(.timeLimit(.minutes(2)), arguments: ["HTTP/1.1 200 OK\rContent-Length: 2", "HTTP/1.1 200 OK\r\nX: y\rContent-Length: 2",
                      "HTTP/1.1 200 OK\r\nX: y\r\r\nContent-Length: 2"])
    func aCarriageReturnInsideALineOfTheHeadIsRefused(head: String) async throws {
        try await expectRefusedAndTheNextAnswered(head: head)
    }

    /// Chunked bodies that RFC 9112 reads to the connection's close (the last coding is not
    /// `chunked`, or the answer is HTTP/1.0, which has no transfer codings) or that name
    /// `chunked` twice: libcurl decoded the chunks, answered "hello", and left what came after
    /// them for the next answer on the connection, where an intermediary reading by the RFC would
    /// have sent it all as this body. Read neither way: refused.
    static let chunkedTwoWays = [
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, identity",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked;x=1",
        "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked",
    ]

    /// Over libcurl, and over URLSession but for HTTP/1.0: FoundationNetworking tells Tern no
    /// answer's HTTP version.
    @Test(.timeLimit(.minutes(2)), arguments: chunkedTwoWays.flatMap { head in (head.hasPrefix("HTTP/1.0") ? [false] : [false, true]).map { (head, $0) } })
    func aBodyChunkedOneWayAndReadToTheCloseAnotherIsRefused(head: String, overURLSession: Bool) async throws {
        try await expectRefusedAndTheNextAnswered(head: head, body: "5\r\nhello\r\n0\r\n\r\n", over: overURLSession ? URLSessionTransport() : nil)
    }

    /// Codings that end in one `chunked` are read one way, however written.
    @Test(.timeLimit(.minutes(2)), arguments: ["Chunked", " chunked ", "chunked,", "identity, chunked", "chunked\r\nTransfer-Encoding: "], [false, true])
    func aBodyWhoseLastCodingIsChunkedIsRead(codings: String, overURLSession: Bool) async throws {
        let server = try Self.server(head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: \(codings)", body: "5\r\nhello\r\n0\r\n\r\n")
        defer { server.stop() }
        let api = try api(over: overURLSession ? URLSessionTransport() : nil)
        let body: String = try await api.request(route: .get(server.baseURL + "/hostile")).value
        #expect(body == "hello")
        let next: String = try await api.request(route: .get(server.baseURL + "/next")).value
        #expect(next == "next")
    }

    /// Heads the server cuts off by closing the connection, each before its empty line: libcurl
    /// ended most such replies as if their heads were whole, and Tern took them for the answer
    /// (a 200 with no body, whatever the missing fields said); browsers refuse them over HTTPS.
    static let cutOff = [
        "HTTP/1.1 200 OK\r\n",
        "HTTP/1.1 200 OK\r\nContent-Le",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n",
        "HTTP/1.1 304 Not Modified\r\nCache-Control: max-age=60\r\n",
        "HTTP/1.1 100 Continue\r\n\r\n",
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n",
    ]

    @Test(.timeLimit(.minutes(2)), arguments: cutOff)
    func aHeadCutOffByTheConnectionsCloseIsNoAnswer(head: String) async throws {
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let name = ConnectionReuseTests.name(of: request)
                guard name == "hostile" else {
                    connection.send(RawServer.Connection.response(name))
                    continue
                }
                connection.send(head)
                return
            }
        }
        defer { server.stop() }
        let api = try api()
        let error = await apiError(of: api.request(route: .get(server.baseURL + "/hostile")) as Promise<Data>)
        guard case .transportFailed(let failure)? = error else {
            Issue.record("expected transportFailed, got \(String(describing: error))")
            return
        }
        // libcurl itself fails some (a body's length unmet, no final answer: "Empty reply").
        #expect([.networkConnectionLost, .badServerResponse].contains(failure.urlError?.code), "\(failure)")
        let next: String = try await api.request(route: .get(server.baseURL + "/next")).value
        #expect(next == "next")
    }

    /// The same heads over URLSession: FoundationNetworking would read such a body as its
    /// libcurl picks (`5, 30` as 30, `+5` as 5) and wait on a 101 until the request timed out;
    /// Tern refuses them as it does over libcurl. (FoundationNetworking refuses the others itself,
    /// a field name with whitespace before its colon as a header it failed to write.)
    @Test(.timeLimit(.minutes(2)), arguments: untrustworthy.filter { ($0.hasPrefix("HTTP/1.1 200 ") || $0.hasPrefix("HTTP/1.1 30") || $0.hasPrefix("HTTP/1.1 101 ")) && !$0.contains(" :") && !$0.contains("\t:") })
    func overURLSessionTheSameHeadsFailAtOnce(head: String) async throws {
        let server = try Self.server(head: head)
        defer { server.stop() }
        let api = try api(over: URLSessionTransport())
        await expectRefused(by: server, over: api)
        let next: String = try await api.request(route: .get(server.baseURL + "/next")).value
        #expect(next == "next")
        // Lengths that agree are one length, over URLSession too.
        let agreeing = try Self.server(head: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5, 5")
        defer { agreeing.stop() }
        let body: String = try await api.request(route: .get(agreeing.baseURL + "/hostile")).value
        #expect(body == "hello")
    }

    /// A session of the caller's reports nothing to Tern before the task ends: an answer
    /// FoundationNetworking read whole by its own framing is refused then.
    @Test(.timeLimit(.minutes(2)), arguments: ["HTTP/1.1 200 OK\r\nContent-Length: +5", "HTTP/1.1 200 OK\r\nContent-Length: 0x5",
                      "HTTP/1.1 302 Found\r\nLocation: /a\r\nLocation: /b\r\nContent-Length: 5"])
    func overACallersSessionAnAnswerFramedTwoWaysIsRefusedWhole(head: String) async throws {
        let server = try Self.server(head: head)
        defer { server.stop() }
        await expectRefused(by: server, over: try api(over: URLSessionTransport(session: URLSession(configuration: .ephemeral))))
    }

    #if compiler(>=6.3)
    /// A first field line beginning with a space would continue the status line: refused, typed.
    /// libcurl before 8.1.0 appended such a line to the previous transfer's headers, freed by
    /// then, whenever the handle had carried one ("free(): invalid pointer", the process
    /// aborted, one run in three of a fuzzing probe): so each follows an ordinary answer, 200
    /// times, in a child process that a crash would end.
    @Test(.exitTest) func aFoldedFirstFieldFailsTypedAfterAnyAnswerBefore() async throws {
        let server = try Self.server(head: "HTTP/1.1 200 OK\r\n folded: x\r\nContent-Length: 5")
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [url = server.baseURL as String] in
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 120, retryPolicy: .never), transport: try CurlTransport(),
                                      responseQueue: .global())
                var outcomes = Set<String>()
                for index in 0..<200 {
                    let answer = await (api.request(route: .get(url + "/n\(index)")) as Promise<String>).result
                    let folded = await (api.request(route: .get(url + "/hostile")) as Promise<String>).result
                    switch (answer, folded) {
                    case (.success("n\(index)"), .failure(APIError.transportFailed(let failure))) where failure.urlError?.code == .badServerResponse:
                        outcomes.insert("\(failure)")
                    default:
                        outcomes.insert("unexpected: \(answer), \(folded)")
                    }
                }
                print(outcomes.joined(separator: "\n"))
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(!printed.contains("unexpected") && printed.contains("cannot be trusted") && printed.contains("obsolete line folding"), "\(printed)")
    }
    #endif

    /// 27,000 short fields, as many as the head's limit holds, one of them repeated: the answer
    /// comes with them all, and the next request gets its own.
    @Test(.timeLimit(.minutes(2))) func aHeadOfTensOfThousandsOfFieldsIsAnswered() async throws {
        let fields = (0..<27_000).map { "a\($0):" }.joined(separator: "\r\n")
        let server = try Self.server(head: "HTTP/1.1 200 OK\r\n" + fields + "\r\na1: again\r\nContent-Length: 5")
        defer { server.stop() }
        let api = try api()
        let response: Response = try await api.request(route: .get(server.baseURL + "/hostile")).value
        #expect(String(decoding: response.body, as: UTF8.self) == "hello")
        #expect(response.headers.count == 27_001)
        #expect(response.headers["A1"] == ", again")
        let next: String = try await api.request(route: .get(server.baseURL + "/next")).value
        #expect(next == "next")
    }

    @Test(.timeLimit(.minutes(2))) func aRepeatedLengthThatAgreesIsOneLength() async throws {
        let server = try Self.server(head: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5, 5")
        defer { server.stop() }
        let body: String = try await api().request(route: .get(server.baseURL + "/hostile")).value
        #expect(body == "hello")
    }

    /// A status line, or a field, of 200 KB: past the line libcurl reads, which it reports as
    /// running out of memory; the error says what the server sent.
    @Test(.timeLimit(.minutes(2)), arguments: ["HTTP/1.1 200 " + String(repeating: "O", count: 200_000) + "\r\nContent-Length: 5",
                      "HTTP/1.1 200 OK\r\nX-Long: " + String(repeating: "v", count: 200_000) + "\r\nContent-Length: 5"])
    func aLineOfTwoHundredKilobytesFailsWithATypedError(head: String) async throws {
        let server = try Self.server(head: head)
        defer { server.stop() }
        let error = await apiError(of: try api().request(route: .get(server.baseURL + "/hostile")) as Promise<String>)
        guard case .transportFailed(let failure)? = error else {
            Issue.record("expected transportFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.urlError?.code == .badServerResponse, "\(failure)")
        #expect("\(failure)".contains("passed the 100 KB") && !"\(failure)".contains("memory"), "\(failure)")
    }

    /// A server that answers `/slow` with half its body, and the rest only once `release` is
    /// signalled (or 90 s have passed: at 20, a machine loaded past the tests' own time limits let
    /// `/slow` end before `/claim` was sent, which then went on its connection, idle by then);
    /// `/claim` with `statusLine`; anything else with its name.
    /// It notes each request with its connection in `requests`, and in `halfSent` when the slow
    /// answer's first half has gone.
    static func claimingServer(statusLine: String, release: DispatchSemaphore, halfSent: Recorder<Int>,
                               requests: Recorder<(connection: Int, name: String)>) throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let name = ConnectionReuseTests.name(of: request)
                requests.append((connection.index, name))
                switch name {
                case "slow":
                    connection.send("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345")
                    halfSent.append(1)
                    _ = release.wait(timeout: .now() + 90)
                    connection.send("67890")
                case "claim":
                    connection.send("\(statusLine)\r\nContent-Length: 5\r\n\r\nclaim")
                default:
                    connection.send(RawServer.Connection.response(name))
                }
            }
        }
    }

    /// With half of `/slow` sent from `baseURL` (a ``claimingServer(statusLine:release:halfSent:requests:)``
    /// or TLS in front of one), `/claim` fails as a head that cannot be trusted, and `/next`
    /// goes on a connection of its own: on the slow answer's, it would wait for it and read its
    /// rest.
    func expectClaimRefusedAndNoConnectionShared(at baseURL: String, over api: AbstractAPI, release: DispatchSemaphore,
                                                 halfSent: Recorder<Int>, requests: Recorder<(connection: Int, name: String)>) async throws {
        let slow: Promise<String> = api.request(route: .get(baseURL + "/slow"))
        #expect(await eventually { !halfSent.items.isEmpty })
        await expectRefused(at: baseURL + "/claim", over: api)
        // Bounded: on the slow answer's connection it would wait for the release, which comes after.
        let next = await (api.request(route: .get(baseURL + "/next"), options: RequestOptions(timeout: 15)) as Promise<String>).result
        release.signal()
        #expect((try? next.get()) == "next", "\(next)")
        #expect(try await slow.value == "1234567890")
        let slowConnection = requests.items.first { $0.name == "slow" }?.connection
        #expect(requests.items.filter { $0.connection == slowConnection }.map(\.name) == ["slow"], "\(requests.items)")
    }

    /// One answer whose status line says HTTP/2 on an HTTP/1 connection made libcurl 7.88 take
    /// every connection to that server for one that carries many requests at once: the next
    /// request was written on the connection of an answer still coming, and read the rest of it
    /// as its own (found by `ScrambledAnswerTests` with more seeds: "HTTP/1.0 200 OK" with four
    /// bytes cut reads "HTTP/200 OK"). Now that answer fails, and no connection carries a request
    /// while another's answer is on it.
    @Test(.timeLimit(.minutes(2)), arguments: claimsOfHTTP2)
    func anAnswerThatSaysHTTP2OverPlainHTTPFailsAndSharesNoConnection(statusLine: String) async throws {
        let (release, halfSent, requests) = (DispatchSemaphore(value: 0), Recorder<Int>(), Recorder<(connection: Int, name: String)>())
        let server = try Self.claimingServer(statusLine: statusLine, release: release, halfSent: halfSent, requests: requests)
        defer { server.stop() }
        try await expectClaimRefusedAndNoConnectionShared(at: server.baseURL, over: try api(), release: release, halfSent: halfSent, requests: requests)
    }

    static let claimsOfHTTP2 = ["HTTP/2 200 OK", "HTTP/2.0 200 OK", "HTTP/200 OK", "HTTP/3 200 OK"]

    @Test(.timeLimit(.minutes(2))) func aLocationInUTF8IsFollowedAsWritten() async throws {
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let target = request.split(separator: " ")[1]
                if target == "/start" {
                    connection.send("HTTP/1.1 302 Found\r\nLocation: /caf\u{E9}/\u{65E5}\r\nContent-Length: 0\r\n\r\n")
                } else {
                    connection.send(RawServer.Connection.response(String(target)))
                }
            }
        }
        defer { server.stop() }
        let landed: String = try await api().request(route: .get(server.baseURL + "/start")).value
        #expect(landed == "/caf%C3%A9/%E6%97%A5")
    }
}
#endif
