#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting
import TernTransport

/// Event streams cancelled mid-body over HTTP/2 (libcurl), round after round, each while a
/// sibling stream on its connection and a JSON request (on the requests' loop) are answered:
/// each cancelled stream ends once, `cancelled`, its plugins told once; its stream alone is
/// reset (RST_STREAM); the siblings get their answers; the two connections are reused for every
/// round, none left behind and none opened anew.
@Suite(.onTestThreads, .timeLimit(.minutes(1)), .enabled(if: TestTransport.isCurl, "HTTP/2 is libcurl's alone on Linux"))
struct HTTP2StreamCancelAttackTests {
    static let rounds = 8

    struct Item: Decodable, Equatable {
        let name: String
    }

    @Test func streamsCancelledMidBodyResetThemselvesAloneAndTheConnectionsGoOn() async throws {
        // Each round: 1 a flood, 2 a sibling stream, 3 a JSON request, 4 a sibling after the cancel.
        var plans: [Int: HTTP2StreamServer.Plan] = [:]
        for round in 0..<Self.rounds { plans[4 * round + 1] = .flood }
        let server = try HTTP2StreamServer(plans: plans)
        defer { server.stop() }
        let log = HTTP2StreamDropAttackTests.Log()
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, plugins: [log]),
                              transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
        func sibling(_ path: String) async throws -> [String] {
            var lines: [String] = []
            for try await line in api.stream(route: .get(server.url + path)).lines { lines.append(line) }
            return lines
        }
        let answer = [#"{"name":"sibling"}"#]
        for round in 0..<Self.rounds {
            let flood = api.stream(route: .get(server.url + "/flood"))
            var events = flood.events.makeAsyncIterator()
            var ids: [String] = []
            for _ in 0..<3 { ids.append(try await events.next()?.lastEventID ?? "none") }
            #expect(ids == ["1", "2", "3"])
            #expect(try await sibling("/before\(round)") == answer)
            let item: Item = try await api.request(route: .get(server.url + "/item\(round)")).value
            #expect(item == Item(name: "sibling"))
            flood.cancel()
            let ending = await HTTP2StreamDropAttackTests.ending { while try await events.next() != nil {} }
            #expect(ending == "cancelled", "round \(round)")
            #expect(try await sibling("/after\(round)") == answer)
        }
        let requests = server.requests
        try #require(requests.count == 4 * Self.rounds)
        let floods = (0..<Self.rounds).map { requests[4 * $0] }
        // The floods were reset, each, and nothing else (libcurl sends a reset once the
        // connection is next used: the sibling after it uses it).
        #expect(await eventually(timeout: 5) { Set(server.resets) == Set(floods.map(\.stream)) }, "\(server.resets) \(floods)")
        #expect(server.resets.count == Self.rounds)
        // Two connections, for the streams and the requests, each reused every round.
        #expect(server.connections == 2)
        #expect(Set(requests.enumerated().filter { $0.offset % 4 != 2 }.map(\.element.connection)).count == 1)
        #expect(Set(requests.enumerated().filter { $0.offset % 4 == 2 }.map(\.element.connection)).count == 1)
        // No socket left behind: the client holds the two connections it reused, no more.
        #expect(TCPSockets.clientEnds(to: server.port).count == 2, "\(TCPSockets.describe(port: server.port))")
        // Plugins heard each flood end once, cancelled.
        #expect(await eventually { log.ends("/flood").count == Self.rounds })
        #expect(log.ends("/flood") == Array(repeating: "cancelled", count: Self.rounds))
    }
}
#endif
