import Dispatch
import Foundation
import Testing
import Tern

/// No request gets another's answer: a connection on which the server sent bytes nobody asked
/// for (a stray response, a body after a HEAD's head, a 204's body) is closed, never reused.
///
/// Over libcurl, and over URLSession where Apple's networking carries it. On Linux URLSession
/// runs on FoundationNetworking's own libcurl handles, which reuse such a connection (as libcurl
/// 7.88 does on its own) and which Tern cannot reach; the README says so.
@Suite(.onTestThreads, .timeLimit(.minutes(1)), .enabled(if: TestTransport.refusesStrayBytes, "FoundationNetworking reuses a connection with unread input"))
struct ConnectionReuseTests {
    /// The path of a request, without its slash: what the scripts answer with.
    static func name(of request: String) -> String {
        let target = request.split(separator: " ").dropFirst().first ?? "/"
        return String(target.dropFirst())
    }

    /// Answers each request with its name, and after the first answer on the first connection
    /// sends `stray` once `delay` milliseconds later, and notes it in `strayed`.
    static func server(stray: String, delay: Int, strayed: Recorder<Int>) throws -> RawServer {
        try RawServer { connection in
            var first = connection.index == 0
            while let request = connection.readRequest() {
                let isHead = request.hasPrefix("HEAD ")
                connection.send(isHead ? "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n" : RawServer.Connection.response(name(of: request)))
                if first {
                    first = false
                    connection.pause(delay)
                    connection.send(stray)
                    strayed.append(1)
                }
            }
        }
    }

    /// Waits until the server has sent its stray bytes, so that they wait on the idle connection
    /// before the next request (sent after them, no client could tell them from its answer).
    static func waitUntilSent(_ strayed: Recorder<Int>) async throws {
        #expect(await eventually { !strayed.items.isEmpty })
        try await Task.sleep(for: .milliseconds(20))
    }

    func api() throws -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
    }

    @Test(arguments: [0, 5, 200])
    func aStrayResponseOnAnIdleConnectionIsNeverTakenForTheNextAnswer(delay: Int) async throws {
        let strayed = Recorder<Int>()
        let server = try Self.server(stray: RawServer.Connection.response("stray"), delay: delay, strayed: strayed)
        defer { server.stop() }
        let api = try api()
        let first: String = try await api.request(route: .get(server.baseURL + "/first")).value
        #expect(first == "first")
        try await Self.waitUntilSent(strayed)
        for index in 0..<6 {
            let answer: String = try await api.request(route: .get(server.baseURL + "/next\(index)")).value
            #expect(answer == "next\(index)")
        }
    }

    @Test func aBodyAfterAHeadsHeadIsNeverTakenForTheNextAnswer() async throws {
        let strayed = Recorder<Int>()
        let server = try Self.server(stray: "hello", delay: 5, strayed: strayed)
        defer { server.stop() }
        let api = try api()
        let head: Data = try await api.request(route: .head(server.baseURL + "/head")).value
        #expect(head.isEmpty)
        try await Self.waitUntilSent(strayed)
        let answer: String = try await api.request(route: .get(server.baseURL + "/after"), parameters: nil).value
        #expect(answer == "after")
    }

    @Test(arguments: ["204 No Content", "304 Not Modified"])
    func aBodyAfterABodilessStatusIsNeverTakenForTheNextAnswer(status: String) async throws {
        let strayed = Recorder<Int>()
        let server = try RawServer { connection in
            var first = connection.index == 0
            while let request = connection.readRequest() {
                if first {
                    first = false
                    // The body the status forbids, with a whole response inside it.
                    connection.send("HTTP/1.1 \(status)\r\nContent-Length: 0\r\n\r\n")
                    connection.pause(5)
                    connection.send(RawServer.Connection.response("stray"))
                    strayed.append(1)
                } else {
                    connection.send(RawServer.Connection.response(Self.name(of: request)))
                }
            }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(validation: .acceptAll, retryPolicy: .never), transport: TestTransport.make(),
                              responseQueue: .global())
        _ = try await (api.request(route: .get(server.baseURL + "/first")) as Promise<Data>).value
        try await Self.waitUntilSent(strayed)
        let answer: String = try await api.request(route: .get(server.baseURL + "/after")).value
        #expect(answer == "after")
    }

    /// Answers that can have no body but declare one: a HEAD's (its length, or chunks), a 204's,
    /// a 304's. A compliant server sends no byte of it; a hostile one sends it late, after the
    /// next request has gone out on the connection, where no check could tell it from that
    /// request's answer. Such a connection is not reused.
    static let bodilessAnswersDeclaringABody = [
        ("HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 38\r\n\r\n"),
        ("HEAD", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
        ("GET", "HTTP/1.1 204 No Content\r\nContent-Length: 38\r\n\r\n"),
        ("GET", "HTTP/1.1 304 Not Modified\r\nContent-Length: 38\r\n\r\n"),
    ]

    @Test(arguments: bodilessAnswersDeclaringABody.indices)
    func aBodyDeclaredWhereNoneCanComeIsNeverTakenForTheNextAnswerHoweverLate(_ index: Int) async throws {
        let (method, head) = Self.bodilessAnswersDeclaringABody[index]
        let nextSent = DispatchSemaphore(value: 0)
        let server = try RawServer { connection in
            var first = connection.index == 0
            while let request = connection.readRequest() {
                guard first else {
                    nextSent.signal()
                    connection.send(RawServer.Connection.response(Self.name(of: request)))
                    continue
                }
                first = false
                connection.send(head)
                // The declared body, a whole answer, once the next request is on its way (or
                // sent on this connection, which the server then answers with it).
                _ = nextSent.wait(timeout: .now() + 0.3)
                connection.send(RawServer.Connection.response("stray"))
            }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(validation: .acceptAll, retryPolicy: .never), transport: TestTransport.make(),
                              responseQueue: .global())
        let route: Route = method == "HEAD" ? .head(server.baseURL + "/first") : .get(server.baseURL + "/first")
        _ = try await (api.request(route: route) as Promise<Data>).value
        for index in 0..<3 {
            let answer: String = try await api.request(route: .get(server.baseURL + "/next\(index)")).value
            #expect(answer == "next\(index)")
        }
    }

    @Test func bytesAfterACancelledBodyAreNeverTakenForTheNextAnswer() async throws {
        let (halfSent, cancelled) = (Recorder<Int>(), DispatchSemaphore(value: 0))
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                if Self.name(of: request) == "slow" {
                    // Half the body, then the rest and a stray response once the client gave up.
                    connection.send("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello")
                    halfSent.append(1)
                    // Long: on a loaded machine the test's cancel was seen to come after 10 s.
                    _ = cancelled.wait(timeout: .now() + 50)
                    connection.pause(50)
                    connection.send("world" + RawServer.Connection.response("stray"))
                } else {
                    connection.send(RawServer.Connection.response(Self.name(of: request)))
                }
            }
        }
        defer { server.stop() }
        let api = try api()
        let slow: Promise<String> = api.request(route: .get(server.baseURL + "/slow"))
        #expect(await eventually { !halfSent.items.isEmpty })
        slow.cancel()
        cancelled.signal()
        let error = await apiError(of: slow)
        #expect(error?.isCancellation == true, "\(String(describing: error))")
        try await Task.sleep(for: .milliseconds(200))
        for index in 0..<3 {
            let answer: String = try await api.request(route: .get(server.baseURL + "/next\(index)")).value
            #expect(answer == "next\(index)")
        }
    }

    @Test func aWellBehavedServerKeepsItsConnection() async throws {
        // The check must not cost what keep-alive is for: with no stray bytes, one connection.
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                connection.send(RawServer.Connection.response(Self.name(of: request)))
            }
        }
        defer { server.stop() }
        let api = try api()
        for index in 0..<5 {
            let answer: String = try await api.request(route: .get(server.baseURL + "/r\(index)")).value
            #expect(answer == "r\(index)")
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(server.connections == 1)
    }

    /// A first answer with a whole response after it in the same write, where libcurl reads
    /// both at once: what it reads past the answer's end is nobody's.
    static let strayInTheSameWrite: [(name: String, method: String, first: String)] = {
        let stray = RawServer.Connection.response("stray")
        return [
            ("a HEAD's body", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: \(stray.utf8.count)\r\n\r\n" + stray),
            ("a 204's body", "GET", "HTTP/1.1 204 No Content\r\n\r\n" + stray),
            ("a 304's body", "GET", "HTTP/1.1 304 Not Modified\r\nContent-Length: 0\r\n\r\n" + stray),
            ("past the stated length", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" + stray),
            ("past the last chunk", "GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + stray),
            ("after a 100 and its answer", "GET", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" + stray),
        ]
    }()

    @Test(arguments: strayInTheSameWrite.indices)
    func aStrayResponseInTheSameWriteIsNeverTakenForTheNextAnswer(_ index: Int) async throws {
        let (_, method, first) = Self.strayInTheSameWrite[index]
        let server = try RawServer { connection in
            var isFirst = connection.index == 0
            while let request = connection.readRequest() {
                connection.send(isFirst ? first : RawServer.Connection.response(Self.name(of: request)))
                isFirst = false
            }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(validation: .acceptAll, retryPolicy: .never), transport: TestTransport.make(),
                              responseQueue: .global())
        let route: Route = method == "HEAD" ? .head(server.baseURL + "/first") : .get(server.baseURL + "/first")
        let answer = try await (api.request(route: route) as Promise<String>).value
        #expect(answer != "stray" && !answer.contains("HTTP/1.1"), "\(Self.strayInTheSameWrite[index].name): \(answer)")
        for next in 0..<4 {
            let answer: String = try await api.request(route: .get(server.baseURL + "/next\(next)")).value
            #expect(answer == "next\(next)", "\(Self.strayInTheSameWrite[index].name)")
        }
    }
}
