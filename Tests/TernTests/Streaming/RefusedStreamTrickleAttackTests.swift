import Foundation
import Testing
import Tern
import TernCore
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A stream or an event source refused at its head (a `401` whose credentials the delegate
/// refreshes, a `404` or `503` validation refuses), whose body then trickles a byte a second, as a
/// proxy's error page or a hostile host may: under the idle timeout, never ending within the
/// request's timeout.
///
/// Authentication.md promises that "a stream is judged at its head" (the delegate "handed an
/// empty body"), and StreamingResponses.md that a stream's "401 refreshes the credentials" and
/// that "a status validation refuses" ends an event source "with that error". But
/// `RequestExecution.openStream` returns `nil` for a head validation refuses, and the refusal's
/// body was read whole before anything was judged: the refresh did not start, nor did the
/// source end, until the body ended or the request's timeout fired. The timeout was then an
/// `APIError.timeout`, which `EventSource.isWorthReconnecting` takes as the network's failure:
/// with the default `EventReconnection` (no `maximumFailures`), the source asked again, was
/// refused again, and looped for ever, never refreshing and never ending with the status. Now
/// such a head is taken with the body that comes within a second, as an answer that is no event
/// stream is (`NotAnEventStream`). Here the request's timeout is 20 s and the source gives up
/// after one failure.
///
/// Failed on both transports.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RefusedStreamTrickleAttackTests {
    /// Signs with its token; refreshes with `POST /token`, unsigned.
    final class Store: APIDelegate, Sendable {
        struct Reply: Decodable, Sendable { let token: String }
        let token = Locked("t0")
        let tokenURL: String
        let refreshes = Locked(0)

        init(tokenURL: String) { self.tokenURL = tokenURL }

        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer " + token.withLock { $0 }, forHTTPHeaderField: "Authorization")
        }

        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            refreshes.withLock { $0 += 1 }
            let reply: Promise<Reply> = api.request(route: .post(tokenURL), options: RequestOptions(retryPolicy: .never, authenticates: false))
            return reply.map { [self] reply in token.withLock { $0 = reply.token } }
        }
    }

    enum Refusal: String, CaseIterable, Sendable { case unauthorized = "401 Unauthorized", notFound = "404 Not Found", unavailable = "503 Service Unavailable" }
    enum Reader: String, CaseIterable, Sendable { case events, stream }

    /// A server that issues `t1` at `POST /token`, answers a request signed with it with one
    /// event (or line), and refuses any other with `refusal`, its body trickling.
    static func server(refusing refusal: Refusal, refused: Recorder<Bool>? = nil) throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                if request.hasPrefix("POST /token") {
                    let body = #"{"token": "t1"}"#
                    guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)") else { return }
                    continue
                }
                if refusal == .unauthorized, request.contains("Authorization: Bearer t1\r\n") {
                    let text = "data: hello\n\n"
                    _ = connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                                        + String(text.utf8.count, radix: 16) + "\r\n" + text + "\r\n0\r\n\r\n")
                    continue
                }
                refused?.append(true)
                guard connection.send("HTTP/1.1 \(refusal.rawValue)\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                                      + "9\r\n{\"error\":\r\n") else { return }
                for _ in 0..<45 {
                    connection.pause(1000)
                    guard connection.send("1\r\n \r\n") else { return }
                }
                _ = connection.send("1\r\n}\r\n0\r\n\r\n")
            }
        }
    }

    /// What `reader` reads from `url` until its first event, or the stream's end; and why it failed.
    static func read(_ api: AbstractAPI, url: String, as reader: Reader) async -> (received: [String], failure: (any Error)?) {
        var received: [String] = []
        do {
            switch reader {
            case .events:
                for try await event in api.events(route: .get(url), reconnection: EventReconnection(maximumFailures: 1)) {
                    received.append(event.data)
                    break
                }
            case .stream:
                for try await line in api.stream(route: .get(url)).lines { received.append(line) }
            }
        } catch {
            return (received, error)
        }
        return (received, nil)
    }

    @Test(arguments: Refusal.allCases, Reader.allCases)
    func aRefusalWhoseBodyTricklesIsJudgedAtItsHead(refusal: Refusal, reader: Reader) async throws {
        let server = try Self.server(refusing: refusal)
        defer { server.stop() }
        let store = Store(tokenURL: server.baseURL + "/token")
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        if refusal == .unauthorized { api.delegate = store }
        let (received, failure) = await Self.read(api, url: server.baseURL + "/changes", as: reader)
        switch refusal {
        case .unauthorized:
            // One refresh, at the head; the replay signed with t1 reads the event.
            #expect(store.refreshes.withLock { $0 } == 1)
            #expect(received.first == (reader == .events ? "hello" : "data: hello"), "\(String(describing: failure))")
        case .notFound, .unavailable:
            // The status's typed error, not the request's timeout.
            let error = failure as? APIError
            guard case .unacceptableStatus(let status)? = error else {
                Issue.record("expected unacceptableStatus, got \(String(describing: failure))")
                return
            }
            #expect(status.statusCode == Int(refusal.rawValue.prefix(3)))
        }
    }

    /// Signs with its token, and asks for a refresh on an answer that says its token expired
    /// (`X-Token-Expired: true`), whatever its status.
    final class HeaderStore: APIDelegate, Sendable {
        let inner: Store
        /// The length of the body each judgement was handed.
        let judged = Locked<[Int]>([])
        init(tokenURL: String) { inner = Store(tokenURL: tokenURL) }
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws { try inner.api(api, willSend: &request) }
        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> { inner.refreshCredentials(for: api) }
        func api(_ api: AbstractAPI, needsRefreshFor response: HTTPURLResponse, data: Data, request: URLRequest) -> Bool {
            judged.withLock { $0.append(data.count) }
            return response.value(forHTTPHeaderField: "X-Token-Expired") == "true"
        }
    }

    /// An event source whose server answers the old token's request with an ordinary event
    /// stream, a `200` whose head says the token expired, and that stays open (as an event
    /// stream does, a comment every second). The delegate's `needsRefreshFor` says so at the head:
    /// "a stream is judged at its head", so the refresh runs and the replay, signed with `t1`,
    /// reads the event. Instead the delegate was asked once, at the head, with an empty body, and
    /// said `true`; `openStream` returned `nil`, the endless body was read as a whole answer's,
    /// and the refresh never ran: `APIError.timeout` after 20 s, on libcurl and URLSession. With
    /// the default reconnection an event source would time out, reconnect and do so for ever.
    @Test(arguments: Reader.allCases)
    func aStreamWhoseHeadAsksForARefreshIsRefreshedAtItsHead(reader: Reader) async throws {
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                if request.hasPrefix("POST /token") {
                    let body = #"{"token": "t1"}"#
                    guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)") else { return }
                    continue
                }
                let text = "data: hello\n\n"
                if request.contains("Authorization: Bearer t1\r\n") {
                    _ = connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                                        + String(text.utf8.count, radix: 16) + "\r\n" + text + "\r\n0\r\n\r\n")
                    continue
                }
                guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Token-Expired: true\r\nTransfer-Encoding: chunked\r\n\r\n") else { return }
                for _ in 0..<45 {
                    guard connection.send("3\r\n:\n\n\r\n") else { return }
                    connection.pause(1000)
                }
                _ = connection.send("0\r\n\r\n")
            }
        }
        defer { server.stop() }
        let store = HeaderStore(tokenURL: server.baseURL + "/token")
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        api.delegate = store
        let (received, failure) = await Self.read(api, url: server.baseURL + "/changes", as: reader)
        #expect(store.inner.refreshes.withLock { $0 } == 1, "judged with bodies of \(store.judged.withLock { $0 }) bytes")
        #expect(received.first == (reader == .events ? "hello" : "data: hello"), "\(String(describing: failure))")
    }

    /// The same 401, its body trickling, to an event source with the default reconnection and
    /// a request timeout of 5 s: each connection timed out, the timeout was taken as the
    /// network's failure, and the source asked again, was refused again, and so on; in 25 s it
    /// had neither refreshed nor ended ("a status validation refuses ... end it with that
    /// error"), the server asked again and again with the same dead token (2 or 3 requests refused
    /// in 25 s, on libcurl and URLSession).
    @Test func aSourceWhoseRefusalTricklesNeitherRefreshesNorEnds() async throws {
        let refused = Recorder<Bool>()
        let server = try Self.server(refusing: .unauthorized, refused: refused)
        defer { server.stop() }
        let store = Store(tokenURL: server.baseURL + "/token")
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 5, retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        api.delegate = store
        let outcome = Locked<String?>(nil)
        let reading = Task.onTestThreads {
            do {
                for try await event in api.events(route: .get(server.baseURL + "/changes")) {
                    outcome.withLock { $0 = "event \(event.data)" }
                    return
                }
                outcome.withLock { $0 = "ended" }
            } catch {
                outcome.withLock { $0 = "failed: \(error)" }
            }
        }
        let settled = await eventually(timeout: 25) { outcome.withLock { $0 } != nil || store.refreshes.withLock { $0 } > 0 }
        reading.cancel()
        #expect(settled, "after 25 s: no refresh, no end, \(refused.items.count) requests refused")
        #expect(store.refreshes.withLock { $0 } == 1)
    }
}
