import Foundation
import Testing
@testable import Tern
import TernTesting

/// A stream cancelled while its redirect is being followed: it ends cancelled, and the
/// connection to where it was sent is closed, not held until the timeout.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct StreamRedirectCancelTests {
    @Test func aStreamCancelledMidRedirectEndsCancelledAndLetsTheTargetGo() async throws {
        let reached = Recorder<String>()
        let target = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            reached.append("request")
            // Never answers; notes when the client hangs up (or 20 s pass).
            _ = connection.readAvailable(for: 20)
            reached.append("closed")
        }
        defer { target.stop() }
        let start = try RawServer { connection in
            while connection.readRequest() != nil {
                guard connection.send(RawServer.Connection.response("", status: "302 Found", headers: "Location: \(target.baseURL)/held\r\n")) else { return }
            }
        }
        defer { start.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: TestTransport.make(),
                              responseQueue: .global())
        let stream = api.stream(route: .get(start.baseURL + "/start"))
        while !reached.items.contains("request") { try await Task.sleep(nanoseconds: 10_000_000) }
        stream.cancel()
        let result = await stream.response.result
        guard case .failure(APIError.cancelled) = result else { Issue.record("expected cancelled, got \(result)"); return }
        for _ in 0..<1500 where !reached.items.contains("closed") { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(reached.items == ["request", "closed"])
    }
}
