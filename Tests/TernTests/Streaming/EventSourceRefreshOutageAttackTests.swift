import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An event source whose reconnection is refused (its token expired), and whose delegate's
/// refresh then fails on the network: the token endpoint is down a moment (it hangs up, or does
/// not answer in time).
///
/// Promised (`AbstractAPI.events(route:parameters:options:reconnection:)`): "It ends when the
/// server answers 204, and fails with the request's error on a status validation refuses, on a
/// cancel, on a transport's failure that is not a `URLError` (…), or once
/// `reconnection.maximumFailures` attempts have failed in a row"; the Streaming article: "while
/// the server is down, the loop waits on". A failure of the network is waited out, and a
/// refresh that fails on the network is one too: the Authentication article does not count it
/// against `RefreshLimit` ("refreshes that fail on the network do not count"), since the next
/// request may refresh again.
///
/// What happens: the source ends for good, throwing `refreshFailed` with the token request's
/// `transportFailed` (a `URLError`) or `timeout` inside: `EventSource.isWorthReconnecting`
/// reconnects after `.transportFailed` and `.timeout` alone, and an `.authentication` error
/// wrapping either is not looked into. A feed of a long-lived app dies with a blip of its
/// token endpoint, while the same blip of the feed's own server is waited out.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct EventSourceRefreshOutageAttackTests {
    enum Outage: String, CaseIterable, Sendable { case hangUp, silence }

    static func events(_ body: String) -> String {
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
    }

    /// The first connection brings event `a` and ends; the reconnection, with the expired t0,
    /// is refused; the first refresh meets the outage, the next gets t1. The source waits, comes
    /// back, is refused again, refreshes, and reads `b` with t1.
    @Test(arguments: Outage.allCases)
    func aRefreshThatFailsOnTheNetworkIsWaitedOut(outage: Outage) async throws {
        let tokenCalls = Locked(0)
        let feed = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                if request.hasPrefix("POST /token ") {
                    guard tokenCalls.withLock({ count in count += 1; return count }) > 1 else {
                        // Down a moment: no answer.
                        if outage == .silence { connection.pause(6_000) }
                        return
                    }
                    guard connection.send(RawServer.Connection.response("t1")) else { return }
                    continue
                }
                let token = TokenEndpointStore.token(in: request)
                feed.append(token)
                if feed.items.count == 1 {
                    connection.send(Self.events("retry: 500\nid: 1\ndata: a\n\n"))
                    return
                }
                guard token == "t1" else {
                    guard connection.send(RawServer.Connection.response("expired", status: "401 Unauthorized")) else { return }
                    continue
                }
                connection.send(Self.events("id: 2\ndata: b\n\n"))
                return
            }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never),
                              transport: TestTransport.make(), responseQueue: .global())
        // 2 s: URLSession on Linux cuts timeouts to whole seconds, and a busy machine may take
        // one of them to answer an ordinary refresh.
        let store = TokenEndpointStore(tokenURL: server.baseURL + "/token", timeout: 2)
        api.delegate = store
        defer { withExtendedLifetime(store) {} }

        var events: [String] = []
        var ended: (any Error)?
        do {
            for try await event in api.events(route: .get(server.baseURL + "/changes"), reconnection: EventReconnection(delay: 0.5, maximumDelay: 1)) {
                events.append(event.data)
                if events.count == 2 { break }
            }
        } catch {
            ended = error
        }
        #expect(ended == nil, "the source ended with \(ended.map { "\($0)" } ?? "")")
        #expect(events == ["a", "b"])
        // The first refresh meets the outage and a later one brings t1; a refresh slowed past its
        // timeout by a busy machine is waited out too, but the source does not refresh in a loop.
        #expect((2...3).contains(tokenCalls.withLock { $0 }))
    }
}
