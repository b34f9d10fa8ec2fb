import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A server that sends its answer steadily, in pieces, over longer than the API's idle timeout,
/// to an API over a session of the caller's: that session's completion handler gets the answer
/// whole, at its end, so Tern saw no byte move and gave up every attempt as idle while the
/// bytes flowed ("went 1 s with no byte sent or received"), and retries started it over from
/// nothing. No idle timeout watches such a session's exchanges now.
///
/// URLSession by nature, whatever transport the run tests.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CallersSessionIdleAttackTests {
    @Test func anAnswerThatFlowsLongerThanTheIdleTimeoutArrivesWhole() async throws {
        let pieces = 8
        let server = try RawServer { connection in
            guard connection.readRequest() != nil,
                  connection.send("HTTP/1.1 200 OK\r\nContent-Length: \(pieces * 1024)\r\nConnection: close\r\n\r\n") else { return }
            for _ in 0..<pieces {
                usleep(400_000)
                guard connection.send(String(repeating: "x", count: 1024)) else { return }
            }
        }
        defer { server.stop() }
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, idleTimeout: 1, retryPolicy: .never),
                              transport: URLSessionTransport(session: session), responseQueue: .global())
        let body: Data = try await api.request(route: .get(server.baseURL + "/slow")).value
        #expect(body.count == pieces * 1024)
    }
}
