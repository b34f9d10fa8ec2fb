#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if os(Linux)
import Foundation
import Testing
import Tern

/// A kept-alive connection the server closes as a request arrives on it, unanswered (it timed
/// the connection out as the client reused it): libcurl sends the request again on a new
/// connection. Tern lets it only for an idempotent method, reading the body again from its
/// start; a POST, which the server may have acted on, fails typed and is sent once.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ResendingTests {
    /// Answers the first request on the first connection, then reads the second whole and hangs
    /// up; on every other connection, answers each request with its body. Records each request
    /// line and body it read.
    static func server(heard: Recorder<String>) throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let line = request.components(separatedBy: "\r\n").first ?? ""
                let body = request.components(separatedBy: "\r\n\r\n").dropFirst().joined()
                heard.append("\(connection.index) \(line) \(body)")
                if connection.index == 0, heard.items.count == 2 { return }   // hangs up unanswered
                connection.send(RawServer.Connection.response(body.isEmpty ? "first" : body))
            }
        }
    }

    /// The body `{"source":"<source>"}` from memory, a file or a stream, and the file, for the
    /// caller to remove.
    static func body(from source: String) throws -> (text: String, parameters: any RequestParameters, file: URL) {
        let body = "{\"source\":\"\(source)\"}"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-resend-\(UUID())")
        try Data(body.utf8).write(to: file)
        let parameters: any RequestParameters = switch source {
        case "file": BodyParameters(file, contentType: "application/json")
        case "stream": BodyParameters(length: Int64(body.utf8.count), contentType: "application/json") { InputStream(data: Data(body.utf8)) }
        default: JSONParameters(["source": source])
        }
        return (body, parameters, file)
    }

    /// Sends a GET to `server` over `transport` (answered), then `method` with `parameters`
    /// (which the server hangs up on); the second's result.
    static func afterAGet(_ method: String, _ parameters: any RequestParameters, to server: RawServer,
                          over transport: any Transport) async throws -> Result<String, any Error> {
        // A timeout long enough that a failure is not it.
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 50, retryPolicy: .never), transport: transport, responseQueue: .global())
        let first: String = try await api.request(route: .get(server.baseURL + "/first")).value
        #expect(first == "first")
        let route: Route = method == "PUT" ? .put(server.baseURL + "/items") : .post(server.baseURL + "/items")
        return await (api.request(route: route, parameters: parameters) as Promise<String>).result
    }

    @Test(arguments: ["memory", "file", "stream"], ["PUT", "POST"])
    func aRequestOnAConnectionClosedUnansweredIsSentAgainOnlyWhenIdempotent(from source: String, method: String) async throws {
        let heard = Recorder<String>()
        let server = try Self.server(heard: heard)
        defer { server.stop() }
        let (body, parameters, file) = try Self.body(from: source)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await Self.afterAGet(method, parameters, to: server, over: try CurlTransport())
        if method == "PUT" {
            #expect(try result.get() == body)
            #expect(heard.items == ["0 GET /first HTTP/1.1 ", "0 PUT /items HTTP/1.1 \(body)", "1 PUT /items HTTP/1.1 \(body)"])
        } else {
            guard case .failure(APIError.transportFailed(let failure)) = result else {
                Issue.record("expected transportFailed, got \(result)")
                return
            }
            #expect(failure.urlError?.code == .networkConnectionLost, "\(failure)")
            #expect("\(failure)".contains("a POST is not sent again"), "\(failure)")
            #expect(heard.items == ["0 GET /first HTTP/1.1 ", "0 POST /items HTTP/1.1 \(body)"])
        }
    }

    /// Over URLSession, FoundationNetworking cannot send the body again (it asks for it, and
    /// takes none Tern could give for a body from memory): the request fails at once as
    /// connection lost, where it waited for its timeout, and the retry policy decides.
    @Test(arguments: ["memory", "stream"], ["PUT", "POST"])
    func overURLSessionTheRequestFailsAtOnceAsConnectionLost(from source: String, method: String) async throws {
        let heard = Recorder<String>()
        let server = try Self.server(heard: heard)
        defer { server.stop() }
        let (body, parameters, file) = try Self.body(from: source)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try await Self.afterAGet(method, parameters, to: server, over: URLSessionTransport())
        guard case .failure(APIError.transportFailed(let failure)) = result else {
            Issue.record("expected transportFailed, got \(result)")
            return
        }
        #expect(failure.urlError?.code == .networkConnectionLost, "\(failure)")
        #expect(heard.items.count == 2 && heard.items.last?.hasSuffix(body) == true, "\(heard.items)")
    }
}
#endif
