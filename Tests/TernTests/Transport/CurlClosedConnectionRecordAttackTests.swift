#if os(Linux)
import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting

/// A server that answers each request in full, keep-alive, then hangs up while the connection is
/// idle: what nginx does after its keep-alive timeout, and many APIs after a few seconds. At
/// once, or a moment later, the client's next request a moment after that: then the newest
/// connection, still open, has the socket number the closed ones had.
///
/// What went wrong: `CurlTransport` notes each HTTP/1 connection a transfer leaves open, to
/// check it for stray bytes before it is reused, and forgot a note only when the same connection
/// was chosen again. libcurl drops a connection it finds dead without a word, and never chooses
/// it again: a process that lives for weeks kept a note for every connection a server closed,
/// one per request here.
///
/// The notes of closed connections are now dropped once there are more than libcurl keeps idle.
@Suite(.onTestThreads, .enabled(if: TestTransport.isCurl, "CurlTransport's own record"), .timeLimit(.minutes(1)))
struct CurlClosedConnectionRecordAttackTests {
    @Test(arguments: [false, true]) func connectionsTheServerClosedWhileIdleLeaveNoRecordBehind(aMomentLater: Bool) async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send(RawServer.Connection.response("ok"))
            if aMomentLater { connection.pause(20) }
        }
        defer { server.stop() }
        let transport = try CurlTransport()
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: .never),
                              transport: transport, responseQueue: .global())
        let requests = aMomentLater ? CurlConnections.fewestToPrune + 16 : 4 * CurlConnections.fewestToPrune
        var answered = 0
        for number in 0..<requests {
            let body: String = try await api.request(route: .get(server.baseURL + "/\(number)")).value
            if body == "ok" { answered += 1 }
            if aMomentLater { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(answered == requests)
        // Read on the loop's thread, which owns the record.
        let noted = await Task(executorPreference: transport.taskExecutor) { transport.loop.connections.notedHTTP1Count }.value
        #expect(noted < CurlConnections.fewestToPrune, "\(noted) notes of idle connections after \(requests) closed ones")
    }
}
#endif
