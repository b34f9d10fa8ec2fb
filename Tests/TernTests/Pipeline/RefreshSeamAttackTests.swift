import Foundation
import Testing
import Tern
import TernCore
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where the delegate's credential refresh meets pagination, the HTTP cache, redirects and
/// event sources, against a raw server that issues tokens `t1`, `t2`, … at `POST /token` and
/// refuses, with a `401` it says may be shared and kept for an hour, any other token than the
/// newest, and the newest too once the test has it expire. Each of these passes on both
/// transports: they cover seams no other test did (a page refused midway from a cached API, a
/// redirected page refused, a revalidation refused, a redirected source refused on reconnection
/// or off its origin, the refresh's trigger cancelled).
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RefreshSeamAttackTests {
    /// The tokens the server issued, and which it takes.
    final class Tokens: Sendable {
        private let state = Locked((issued: 0, expired: false))

        /// Issues the next token, which the server takes from now on.
        func issue() -> String {
            state.withLock { state in
                state.issued += 1
                state.expired = false
                return "t\(state.issued)"
            }
        }

        /// The newest token is refused from now on, until another is issued.
        func expire() { state.withLock { $0.expired = true } }

        /// Whether a request with `authorization` is let in.
        func accepts(_ authorization: String?) -> Bool {
            state.withLock { !$0.expired && $0.issued > 0 && authorization == "Bearer t\($0.issued)" }
        }

        var issued: Int { state.withLock { $0.issued } }
    }

    /// Signs with its token; refreshes with `POST /token` on `tokenURL`, unsigned.
    final class Store: APIDelegate, Sendable {
        struct Reply: Decodable, Sendable { let token: String }
        let token: Locked<String>
        let tokenURL: String
        let refreshes = Locked(0)

        init(token: String, tokenURL: String) {
            self.token = Locked(token)
            self.tokenURL = tokenURL
        }

        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer " + token.withLock { $0 }, forHTTPHeaderField: "Authorization")
        }

        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            refreshes.withLock { $0 += 1 }
            let reply: Promise<Reply> = api.request(route: .post(tokenURL), options: RequestOptions(retryPolicy: .never, authenticates: false))
            return reply.map { [self] reply in token.withLock { $0 = reply.token } }
        }
    }

    static func api(_ delegate: Store, cache: HTTPCache? = nil) -> AbstractAPI {
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, cache: cache),
                              transport: TestTransport.make(), responseQueue: .global())
        api.delegate = delegate
        return api
    }

    static func field(_ name: String, in request: String) -> String? {
        let field = request.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
        return field.map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
    }

    static func json(_ body: String, status: String = "200 OK", headers: String = "") -> String {
        "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\(headers)\r\n\(body)"
    }

    /// A token's answer, or the refusal of a request `tokens` does not take (a refusal that says
    /// any cache may keep it an hour); `nil` when the request may go on.
    static func gate(_ request: String, _ tokens: Tokens) -> String? {
        if request.hasPrefix("POST /token") { return Self.json(#"{"token": "\#(tokens.issue())"}"#) }
        if tokens.accepts(Self.field("Authorization", in: request)) { return nil }
        return Self.json(#"{"code": 401, "message": "expired"}"#, status: "401 Unauthorized", headers: "Cache-Control: public, max-age=3600\r\n")
    }

    // MARK: Pagination

    /// Pages numbered 1 to 3, each one a cache may share and keep a minute, the fourth empty;
    /// `t1` expires as page 3 is first asked for. "Requests refused … wait for it, then each is
    /// replayed once": the pages come once each, in order, after one refresh; a second
    /// iteration, signed with `t2`, is never answered with what `t1` fetched nor with the kept
    /// 401, and gets the same pages.
    @Test func aPageRefusedMidwayIsReplayedAndNeitherCachedRefusalNorOldPagesAnswer() async throws {
        let tokens = Tokens()
        _ = tokens.issue()
        let server = try KeepingServer { request, _ in
            let target = KeepingServer.target(of: request)
            if target == "/items?page=3", tokens.issued == 1 { tokens.expire() }
            if let refused = Self.gate(request, tokens) { return refused }
            let number = Int(target.split(separator: "=").last ?? "") ?? 0
            let body = number <= 3 ? "[\(number * 10 + 1), \(number * 10 + 2)]" : "[]"
            return Self.json(body, headers: "Cache-Control: public, max-age=60\r\n")
        }
        let store = Store(token: "t1", tokenURL: server.baseURL + "/token")
        let api = Self.api(store, cache: HTTPCache())
        let request = APIRequest<[Int]>(.get(server.baseURL + "/items"))
        for iteration in 0..<2 {
            var pages: [[Int]] = []
            for try await page in api.pages(request, style: .pageNumber()) { pages.append(page.elements) }
            #expect(pages == [[11, 12], [21, 22], [31, 32]], "iteration \(iteration)")
        }
        #expect(store.refreshes.withLock { $0 } == 1)
        let afterRefresh = server.requests.items.drop { !$0.hasPrefix("POST /token") }.dropFirst()
        #expect(afterRefresh.allSatisfy { Self.field("Authorization", in: $0) == "Bearer t2" }, "\(Array(afterRefresh))")
    }

    /// Next links resolved against the URL that answered: page 2 is redirected (same origin) to
    /// `/v2/items?page=2`, whose first answer is a 401. Once refreshed and replayed, page 2's
    /// relative next link (`?page=3`) is resolved against `/v2/items`, where it was answered,
    /// and `/items?page=3` (another collection, `[666]`) is never a page.
    @Test func aRedirectedPageRefusedThenReplayedResolvesItsNextLinkWhereItWasAnswered() async throws {
        let tokens = Tokens()
        _ = tokens.issue()
        let server = try KeepingServer { request, _ in
            let target = KeepingServer.target(of: request)
            if target == "/v2/items?page=2", tokens.issued == 1 { tokens.expire() }
            if let refused = Self.gate(request, tokens) { return refused }
            switch target {
            case "/items": return Self.json("[1]", headers: "Link: <?page=2>; rel=\"next\"\r\n")
            case "/items?page=2": return "HTTP/1.1 307 Temporary Redirect\r\nLocation: /v2/items?page=2\r\nContent-Length: 0\r\n\r\n"
            case "/v2/items?page=2": return Self.json("[2]", headers: "Link: <?page=3>; rel=\"next\"\r\n")
            case "/v2/items?page=3": return Self.json("[3]")
            default: return Self.json("[666]")
            }
        }
        let store = Store(token: "t1", tokenURL: server.baseURL + "/token")
        var pages: [[Int]] = []
        for try await page in Self.api(store).pages(APIRequest<[Int]>(.get(server.baseURL + "/items")), style: .linkHeader) {
            pages.append(page.elements)
        }
        #expect(pages == [[1], [2], [3]], "\(server.targets)")
        #expect(store.refreshes.withLock { $0 } == 1)
    }

    // MARK: Revalidation

    /// A response kept for `t1` (shared, `max-age=0`, an `ETag`) is revalidated with `t1`, which
    /// the server refuses; after the refresh, the replay goes signed with `t2`. "Signed for
    /// another account than the response was kept for (a token refreshed in between, say), the
    /// request goes without them and the response is forgotten: your code never sees a `304` it
    /// did not ask for."
    @Test func aRevalidationRefusedIsReplayedWithoutTheOldTokensConditions() async throws {
        let tokens = Tokens()
        _ = tokens.issue()
        let server = try KeepingServer { request, _ in
            if let refused = Self.gate(request, tokens) { return refused }
            if Self.field("If-None-Match", in: request) == "\"v1\"" { return "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\n\r\n" }
            let token = Self.field("Authorization", in: request) ?? ""
            return Self.json(#"{"for": "\#(token)"}"#, headers: "ETag: \"v1\"\r\nCache-Control: public, max-age=0\r\n")
        }
        let store = Store(token: "t1", tokenURL: server.baseURL + "/token")
        let api = Self.api(store, cache: HTTPCache())
        let first: Response = try await api.request(route: .get(server.baseURL + "/doc")).value
        #expect(String(decoding: first.body, as: UTF8.self) == #"{"for": "Bearer t1"}"#)
        tokens.expire()
        let second: Response = try await api.request(route: .get(server.baseURL + "/doc")).value
        #expect(String(decoding: second.body, as: UTF8.self) == #"{"for": "Bearer t2"}"#)
        let signedT2 = server.requests.items.filter { Self.field("Authorization", in: $0) == "Bearer t2" }
        #expect(signedT2.count == 1)
        #expect(signedT2.allSatisfy { Self.field("If-None-Match", in: $0) == nil }, "\(signedT2)")
        #expect(store.refreshes.withLock { $0 } == 1)
    }

    // MARK: Event sources

    static func events(_ text: String) -> String {
        let chunk = String(text.utf8.count, radix: 16) + "\r\n" + text + "\r\n"
        return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + "0\r\n\r\n"
    }

    /// An event source whose first connection is redirected (307) to another origin, which
    /// sends event 1; its reconnection, back at home, is refused with a 401. One refresh; the
    /// replay goes home signed with `t2` and `Last-Event-ID: 1`; the other origin never sees a
    /// token ("`Authorization` stays at its origin when a redirect leaves it").
    @Test func aRedirectedSourcesReconnectionRefusedRefreshesOnceAndResumes() async throws {
        let tokens = Tokens()
        _ = tokens.issue()
        let away = try KeepingServer { _, _ in Self.events("retry: 10\nid: 1\ndata: away\n\n") }
        let count = Locked(0)
        let home = try KeepingServer { request, _ in
            if request.hasPrefix("GET /changes") {
                let number = count.withLock { $0 += 1; return $0 }
                if number == 2 { tokens.expire() }
                if let refused = Self.gate(request, tokens) { return refused }
                if number == 1 { return "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://localhost:\(away.port)/elsewhere\r\nContent-Length: 0\r\n\r\n" }
                if number == 3 { return Self.events("retry: 10\nid: 2\ndata: home\n\n") }
                return "HTTP/1.1 204 No Content\r\n\r\n"
            }
            return Self.gate(request, tokens) ?? Self.json("{}")
        }
        let store = Store(token: "t1", tokenURL: home.baseURL + "/token")
        var events: [ServerSentEvent] = []
        for try await event in Self.api(store).events(route: .get(home.baseURL + "/changes")) { events.append(event) }
        #expect(events == [ServerSentEvent(data: "away", lastEventID: "1"), ServerSentEvent(data: "home", lastEventID: "2")])
        #expect(store.refreshes.withLock { $0 } == 1)
        #expect(away.requests.items.allSatisfy { Self.field("Authorization", in: $0) == nil }, "\(away.requests.items)")
        let changes = home.requests.items.filter { $0.hasPrefix("GET /changes") }
        #expect(changes.count == 4)
        if changes.count >= 3 {
            #expect(Self.field("Authorization", in: changes[2]) == "Bearer t2")
            #expect(Self.field("Last-Event-ID", in: changes[2]) == "1")
            #expect(Self.field("Last-Event-ID", in: changes[1]) == "1")
        }
    }

    /// An event source redirected (307) to another origin, which refuses the request (sent
    /// there unsigned) with a 401: "the delegate neither signs nor refreshes" off the origin, so
    /// no refresh runs, and the source ends with the refusal's typed error rather than reconnect.
    @Test func aSourceRefusedWhereARedirectLeftItsOriginNeitherRefreshesNorLoops() async throws {
        let tokens = Tokens()
        _ = tokens.issue()
        let away = try KeepingServer { _, _ in Self.json(#"{"code": 401}"#, status: "401 Unauthorized") }
        let home = try KeepingServer { request, _ in
            if let refused = Self.gate(request, tokens) { return refused }
            return "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://localhost:\(away.port)/elsewhere\r\nContent-Length: 0\r\n\r\n"
        }
        let store = Store(token: "t1", tokenURL: home.baseURL + "/token")
        var failure: (any Error)?
        do {
            for try await _ in Self.api(store).events(route: .get(home.baseURL + "/changes")) {}
        } catch {
            failure = error
        }
        #expect((failure as? APIError) != nil, "\(String(describing: failure))")
        #expect(store.refreshes.withLock { $0 } == 0)
        #expect(away.requests.items.count == 1)
        #expect(away.requests.items.allSatisfy { Self.field("Authorization", in: $0) == nil })
    }

    // MARK: Redirects

    /// A `POST` answered `303` (same origin), whose `GET` is refused with a 401: the refresh
    /// replays the `GET` the redirect asked for, never the `POST` ("each is replayed once": the
    /// order is placed once). A `307` keeps its method and body: the `POST` to where it pointed
    /// is replayed, with its body, once.
    @Test(arguments: [303, 307])
    func aRedirectedPostRefusedAfterItsRedirectReplaysOnlyTheLastLeg(status: Int) async throws {
        let tokens = Tokens()
        _ = tokens.issue()
        let server = try KeepingServer { request, _ in
            let target = KeepingServer.target(of: request)
            if target == "/orders/1", tokens.issued == 1 { tokens.expire() }
            if let refused = Self.gate(request, tokens) { return refused }
            if target == "/orders" {
                return "HTTP/1.1 \(status) See Other\r\nLocation: /orders/1\r\nContent-Length: 0\r\n\r\n"
            }
            return Self.json(#"{"ok": true}"#)
        }
        let store = Store(token: "t1", tokenURL: server.baseURL + "/token")
        let response: Response = try await Self.api(store).request(route: .post(server.baseURL + "/orders"),
                                                                   parameters: JSONParameters(["item": "boots"])).value
        #expect(response.statusCode == 200)
        let lines = server.requests.items.map { $0.split(separator: "\r\n").first.map(String.init) ?? "" }
        let method = status == 303 ? "GET" : "POST"
        #expect(lines == ["POST /orders HTTP/1.1", "\(method) /orders/1 HTTP/1.1", "POST /token HTTP/1.1", "\(method) /orders/1 HTTP/1.1"])
        if status == 307 {
            let replays = server.requests.items.filter { $0.hasPrefix("POST /orders/1") }
            #expect(replays.allSatisfy { $0.hasSuffix(#"{"item":"boots"}"#) }, "\(replays)")
        }
        #expect(store.refreshes.withLock { $0 } == 1)
    }

    // MARK: Cancels

    /// The request whose 401 started the refresh is cancelled while the refresh runs: the
    /// refresh goes on for the others ("Requests refused or started while it runs wait for it,
    /// then each is replayed once"), and each settles once, answered with `t1`.
    @Test func cancellingTheRequestThatStartedTheRefreshLeavesItRunningForTheOthers() async throws {
        let tokens = Tokens()
        let gate = DispatchSemaphore(value: 0)
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                if request.hasPrefix("POST /token") { _ = gate.wait(timeout: .now() + 30) }
                guard connection.send(Self.gate(request, tokens) ?? Self.json(#"{"ok": true}"#)) else { return }
            }
        }
        defer { server.stop() }
        let store = Store(token: "t0", tokenURL: server.baseURL + "/token")
        let api = Self.api(store)
        let trigger: Promise<Response> = api.request(route: .get(server.baseURL + "/a"))
        #expect(await eventually { store.refreshes.withLock { $0 } == 1 })
        let waiters: [Promise<Response>] = (0..<20).map { api.request(route: .get(server.baseURL + "/b\($0)")) }
        trigger.cancel()
        #expect(await apiError(of: trigger)?.caseName == "cancelled")
        gate.signal()
        for waiter in waiters {
            let result = await waiter.result
            if case .failure(let error) = result { Issue.record("a waiter failed: \(error)") }
        }
        #expect(store.refreshes.withLock { $0 } == 1)
    }
}
