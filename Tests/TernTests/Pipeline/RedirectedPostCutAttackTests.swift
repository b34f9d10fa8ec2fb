#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation
import Testing
import Tern
import TernTesting

/// A POST redirected with a `307` (which keeps the method and the body) to a server that reads
/// the redirected POST whole on the kept-alive connection and hangs up unanswered. Security /
/// RetriesAndRedirects: "a POST, which the server may have acted on, fails typed and is sent
/// once" (ResendingTests holds it for a POST sent straight); the redirected leg is a POST too,
/// and must not be sent again on a new connection behind the retry policy's back.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RedirectedPostCutAttackTests {
    @Test(arguments: [307, 308])
    func aRedirectedPostCutUnansweredIsSentOnce(status: Int) async throws {
        let heard = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let line = request.components(separatedBy: "\r\n").first ?? ""
                let body = request.components(separatedBy: "\r\n\r\n").dropFirst().joined()
                heard.append("\(connection.index) \(line) \(body)")
                if line.hasPrefix("POST /a ") {
                    _ = connection.send("HTTP/1.1 \(status) Redirect\r\nLocation: /b\r\nContent-Length: 0\r\n\r\n")
                    continue
                }
                if connection.index == 0 { return }   // the redirected POST, read whole, unanswered
                _ = connection.send(RawServer.Connection.response(body))
            }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: TestTransport.make(),
                              responseQueue: .global())
        let result = await (api.request(route: .post(server.baseURL + "/a"), parameters: JSONParameters(["order": "one"])) as Promise<String>).result
        let posts = heard.items.filter { $0.contains("POST /b ") }
        #expect(posts.count == 1, "the redirected POST reached the server \(posts.count) times: \(heard.items); result \(result)")
        if case .success(let answer) = result {
            Issue.record("a POST cut unanswered was answered \(answer), after \(heard.items)")
        }
    }

    /// Signs with "Bearer t<n>", refreshing by counting up.
    typealias Tokens = EventSourceTests.CountingTokens

    /// A POST whose body comes from memory, a file or a stream, redirected by a `307` to a
    /// second path on the same origin, where the old token is refused with a 401: refreshed
    /// once, the redirected POST goes again with the new token and its body whole
    /// (Authentication.md: a refused request is "sent again" with the new credentials; a 307
    /// keeps the method and the body). Never a silently wrong answer: the server's echo of the
    /// body it got.
    @Test(arguments: ["memory", "file", "stream"])
    func aRedirectedPostRefusedUntilRefreshedGoesAgainWithItsBody(source: String) async throws {
        let heard = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let line = request.components(separatedBy: "\r\n").first ?? ""
                let body = request.components(separatedBy: "\r\n\r\n").dropFirst().joined()
                let token = ResumeLie.header("Authorization", in: request) ?? "-"
                heard.append("\(line) \(token) \(body)")
                let sent = line.hasPrefix("POST /a ")
                    ? connection.send("HTTP/1.1 307 Redirect\r\nLocation: /b\r\nContent-Length: 0\r\n\r\n")
                    : token == "Bearer t1"
                    ? connection.send("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
                    : connection.send(RawServer.Connection.response(body))
                guard sent else { return }
            }
        }
        defer { server.stop() }
        let (body, parameters, file) = try ResendingTests.body(from: source)
        defer { try? FileManager.default.removeItem(at: file) }
        let tokens = Tokens()
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: TestTransport.make(),
                              responseQueue: .global())
        api.delegate = tokens
        let result = await (api.request(route: .post(server.baseURL + "/a"), parameters: parameters) as Promise<String>).result
        withExtendedLifetime(tokens) {}
        #expect((try? result.get()) == body, "got \(result) after \(heard.items)")
        #expect(heard.items.filter { $0.hasPrefix("POST /b ") } == ["POST /b HTTP/1.1 Bearer t1 \(body)", "POST /b HTTP/1.1 Bearer t2 \(body)"],
                "\(heard.items)")
    }
}
