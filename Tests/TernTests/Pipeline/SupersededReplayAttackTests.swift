import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request replayed after a refresh, whose replay is refused because the credentials it
/// carried were replaced meanwhile by a second refresh, which another request started.
///
/// Promised (the Authentication article, "What Tern guarantees"): "A request signed with
/// credentials older than the current ones is replayed without a new refresh", and "a request
/// refused again right after its replay fails with `stillUnauthorized`; it never loops". The
/// second rule is there so that credentials the server refuses as soon as they are refreshed
/// do not loop; a replay refused with credentials that are no longer the current ones is the
/// first rule's case, and replaying it with the current ones cannot loop (each replay needs a
/// newer generation, which only a refresh, counted by `RefreshLimit`, makes).
///
/// What happens: the request keeps one replay for its whole life (`hasReplayedAfterRefresh` in
/// `RequestStateMachine`), asked before the coordinator, which would have said "replay": the
/// request fails with `stillUnauthorized` ("refused again (401) right after the credentials
/// were refreshed"), though the credentials refused were t1 and t2 was current, and the other
/// request, refused with the same t1, went through with t2. The same one replay is spent for
/// good when the replay is answered (a 503) and a retry, later, is refused with the current
/// credentials: no refresh, `stillUnauthorized` again.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct SupersededReplayAttackTests {
    /// `/a` is refused with t0, refreshed (t1) and replayed; t1 expires as that replay arrives,
    /// whose answer is slow. `/b`, sent meanwhile with t1, is refused, refreshed (t2) and
    /// replayed. Then `/a`'s replay is answered: refused, as its t1 was when it came. t2 is
    /// current: `/a` is replayed with it and succeeds, as `/b` did. The same when `/a`'s refusal
    /// comes while the second refresh still runs: it waits for it.
    @Test(arguments: [false, true]) func aReplayRefusedWithReplacedCredentialsIsReplayedWithTheCurrentOnes(refreshStillRuns: Bool) async throws {
        let issued = Locked(0)
        let expired = Locked<Set<String>>(["t0"])
        let secondIssued = DispatchSemaphore(value: 0)
        let seen = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                if request.hasPrefix("POST /token ") {
                    let token = issued.withLock { count in count += 1; return "t\(count)" }
                    guard connection.send(RawServer.Connection.response(token)) else { return }
                    if token == "t2" { secondIssued.signal() }
                    continue
                }
                let token = TokenEndpointStore.token(in: request)
                let path = String(request.split(separator: " ")[1])
                seen.append("\(path) \(token)")
                if path == "/a" && token == "t1" {
                    // t1 expires as the replay comes; its answer waits for the second refresh.
                    expired.withLock { _ = $0.insert("t1") }
                    _ = secondIssued.wait(timeout: .now() + 10)
                    if !refreshStillRuns { connection.pause(200) }
                }
                // Judged as it came: the newest token, unless it has expired.
                let good = token == "t\(issued.withLock { $0 })" && !expired.withLock { $0.contains(token) }
                let answer = good ? RawServer.Connection.response("ok \(path)")
                    : RawServer.Connection.response("expired", status: "401 Unauthorized")
                guard connection.send(answer) else { return }
            }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never),
                              transport: TestTransport.make(), responseQueue: .global())
        let store = TokenEndpointStore(tokenURL: server.baseURL + "/token", lingers: refreshStillRuns ? 0.5 : 0)
        api.delegate = store
        defer { withExtendedLifetime(store) {} }

        let first: Promise<String> = api.request(route: .get(server.baseURL + "/a"))
        #expect(await eventually { seen.items.contains("/a t1") })
        let second: String = try await api.request(route: .get(server.baseURL + "/b")).value
        #expect(second == "ok /b")
        let result = await first.result
        #expect((try? result.get()) == "ok /a", "\(result); the server saw \(seen.items)")
        // Both replays wait for the second refresh when it still runs: in either order then.
        #expect(seen.items.prefix(3) == ["/a t0", "/a t1", "/b t1"] && Set(seen.items.dropFirst(3)) == ["/b t2", "/a t2"]
                && seen.items.count == 5, "\(seen.items)")
        #expect(issued.withLock { $0 } == 2)
    }
    /// The same one replay spent for good, the other way: `/a` refused with t0, refreshed (t1),
    /// replayed and answered 503; the retry policy sends it again a moment later, when t1 has
    /// expired: refused. That refusal is not "right after its replay" (a 503 came between), and
    /// the credentials it carried are the current ones: a refresh is due, as for any request
    /// refused with them, and `/a` succeeds with t2.
    @Test func aRetryRefusedAfterTheReplayWasAnsweredRefreshesAgain() async throws {
        let issued = Locked(0)
        let seen = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                if request.hasPrefix("POST /token ") {
                    let token = issued.withLock { count in count += 1; return "t\(count)" }
                    guard connection.send(RawServer.Connection.response(token)) else { return }
                    continue
                }
                let token = TokenEndpointStore.token(in: request)
                seen.append(token)
                let answer = switch token {
                case "t1" where seen.items.filter({ $0 == "t1" }).count == 1:
                    RawServer.Connection.response("busy", status: "503 Service Unavailable", headers: "Retry-After: 0\r\n")
                case "t2": RawServer.Connection.response("ok")
                default: RawServer.Connection.response("expired", status: "401 Unauthorized")   // t0, and t1 once it expired
                }
                guard connection.send(answer) else { return }
            }
        }
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: RetryPolicy(maxRetries: 2, baseDelay: 0.05, jitter: false)),
                              transport: TestTransport.make(), responseQueue: .global())
        let store = TokenEndpointStore(tokenURL: server.baseURL + "/token")
        api.delegate = store
        defer { withExtendedLifetime(store) {} }
        let result = await (api.request(route: .get(server.baseURL + "/a")) as Promise<String>).result
        #expect((try? result.get()) == "ok", "\(result); the server saw \(seen.items)")
        #expect(seen.items == ["t0", "t1", "t1", "t2"])
    }
}
