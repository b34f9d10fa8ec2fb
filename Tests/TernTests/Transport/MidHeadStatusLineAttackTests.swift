import Foundation
import Testing
import Tern
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A field line in the middle of a head that begins with `HTTP/` and has a colon:
/// `HTTP/1.1 200 OK: x`, from a raw socket.
///
/// Promised (`ResponseHeadCheck`): a head that frames its body two ways (`Content-Length` and
/// `Transfer-Encoding` both) is refused, typed, and the answer handed over is the one the
/// transport read. libcurl takes that line for a field like any other (it has a colon), reads
/// the head's framing and status from the lines before it, and keeps the connection. Tern's
/// head reader (`ResponseHeadReader.read`) takes any line that begins with `HTTP/` for the
/// status line of a new head: it forgets every field before it and takes its status. So the
/// check never saw the `Content-Length` and `Transfer-Encoding` that libcurl framed the body
/// by (the request succeeded, the connection kept), and a `500` was handed over as a `200`
/// with none of its fields. (FoundationNetworking reads such a head itself, and fails it, typed.)
@Suite(.onTestThreads, .timeLimit(.minutes(1)), .enabled(if: TestTransport.isCurl)) struct MidHeadStatusLineAttackTests {
    static func server(head: String, body: String) throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let hostile = request.hasPrefix("GET /hostile ")
                guard connection.send(hostile ? head + "\r\n\r\n" + body : RawServer.Connection.response("next")) else { return }
            }
        }
    }

    static func api() -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
    }

    /// Both framings, the second hidden behind the line: refused, as the same head without it is.
    @Test func aHeadFramedTwoWaysBeforeTheLineIsRefused() async throws {
        let server = try Self.server(head: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nHTTP/1.1 200 OK: x\r\nContent-Type: text/plain",
                                     body: "5\r\nhello\r\n0\r\n\r\n")
        defer { server.stop() }
        let api = Self.api()
        let result = await (api.request(route: .get(server.baseURL + "/hostile")) as Promise<Response>).result
        guard case .failure(APIError.transportFailed(let failure)) = result else {
            let head = (try? result.get()).map { "\($0.statusCode) \($0.headers)" } ?? "\(result)"
            Issue.record("a head with Content-Length and Transfer-Encoding was not refused: \(head)")
            return
        }
        #expect(failure.urlError?.code == .badServerResponse, "\(failure)")
    }

    /// The status libcurl read, not the line's.
    @Test func aServerErrorIsNotHandedOverAsTheLinesStatus() async throws {
        let server = try Self.server(head: "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\nHTTP/1.1 200 OK: x\r\nContent-Type: text/plain",
                                     body: "hello")
        defer { server.stop() }
        let api = Self.api()
        let result = await (api.request(route: .get(server.baseURL + "/hostile")) as Promise<Response>).result
        switch result {
        case .success(let response):
            Issue.record("a 500 was handed over as a \(response.statusCode), its fields \(response.headers)")
        case .failure(APIError.unacceptableStatus(let failure)):
            #expect(failure.statusCode == 500)
        case .failure(APIError.transportFailed(let failure)):
            #expect(failure.urlError?.code == .badServerResponse, "\(failure)")
        case .failure(let error):
            Issue.record("\(error)")
        }
    }
}
