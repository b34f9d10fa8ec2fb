#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if os(Linux)
import Foundation
import Testing
import Tern

/// A stream the HTTP/2 server refuses (RST_STREAM, REFUSED_STREAM) once its request came whole:
/// libcurl sends the request again on a new connection by itself. What goes again, and how:
/// a request with no body (nothing to take back to its start, so only the connection guard
/// stands in the way), and a body that comes slowly, watched by the idle timeout.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct HTTP2RefusedResendAttackTests {
    typealias Multiplex = HTTP2MultiplexAttackTests

    /// The server, an API over libcurl trusting it, never retrying by itself.
    static func setUp(idle: TimeInterval? = nil) throws -> (Multiplex.ScriptedServer, AbstractAPI) {
        let server = try Multiplex.ScriptedServer()
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, idleTimeout: idle, retryPolicy: .never),
                              transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
        return (server, api)
    }

    /// A request with no body refused: a PUT or a DELETE goes again on a new connection and is
    /// answered there; a POST or a PATCH, which Tern does not send twice, fails typed as
    /// connection lost, sent once. (REFUSED_STREAM says the server did not act on it, so the POST
    /// could go again; Tern cannot tell libcurl's reason for sending again, and stays on the
    /// safe side.)
    @Test(arguments: ["POST", "PATCH", "PUT", "DELETE"])
    func aBodilessRequestRefused(method: String) async throws {
        let (server, api) = try Self.setUp()
        let sent: Promise<Multiplex.Item> = api.request(route: Route(method: HTTPMethod(rawValue: method), url: server.url + "/refused"))
        let refused = try await Multiplex().arrival(1, on: server)
        #expect(refused.body.isEmpty)
        server.autoAnswerFrom = 0
        server.send(on: refused.connection, type: 3, flags: 0, stream: refused.id, payload: Data([0, 0, 0, 7]))
        let result = await sent.result
        if method == "PUT" || method == "DELETE" {
            #expect((try? result.get()) == Multiplex.Item(name: "again"), "\(result)")
            #expect(server.streams.count == 2 && server.streams.last?.connection != refused.connection, "\(server.streams)")
        } else {
            guard case .failure(APIError.transportFailed(let failure)) = result else {
                Issue.record("expected transportFailed, got \(result)")
                return
            }
            #expect(failure.urlError?.code == .networkConnectionLost, "\(failure)")
            #expect(server.streams.count == 1, "\(server.streams)")
        }
        // Whatever came before, the API still answers.
        #expect(try await (api.request(route: .get(server.url + "/after")) as Promise<Multiplex.Item>).value == Multiplex.Item(name: "again"))
    }

    /// A PUT whose body comes slowly from its stream (pieces 100 ms apart, 3 s in all), against
    /// an idle timeout of 1.5 s, refused once it came: sent again whole on a new connection, it
    /// moves all the time, and is answered (see ``ResendSeamAttackTests``).
    @Test func aSlowBodyRefusedGoesAgainWithoutLookingIdle() async throws {
        let (server, api) = try Self.setUp(idle: 1.5)
        let (piece, pieces) = (1_000, 30)
        let upload = BodyParameters(length: Int64(piece * pieces), contentType: "application/octet-stream") {
            IdleTimeoutTests.SlowStream(pieces: pieces, of: piece, every: 100)
        }
        let sent: Promise<Multiplex.Item> = api.request(route: .put(server.url + "/slow"), parameters: upload)
        let refused = try await Multiplex().arrival(1, on: server)
        #expect(refused.body.count == piece * pieces)
        server.autoAnswerFrom = 0
        server.send(on: refused.connection, type: 3, flags: 0, stream: refused.id, payload: Data([0, 0, 0, 7]))
        let result = await sent.result
        #expect((try? result.get()) == Multiplex.Item(name: "again"), "\(result)")
        #expect(server.streams.count == 2 && server.streams.last?.body.count == piece * pieces, "\(server.streams)")
    }
}
#endif
