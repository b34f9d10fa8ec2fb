import Foundation
import Testing
import Tern
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Event sources that reconnect because their connection went idle (the options'
/// `streamIdleTimeout`), not because the server ended it, through an API with an HTTP cache and
/// a cookie jar: the reconnection carries `Last-Event-ID` and the cookie, waits the server's
/// `retry`, and never reads what the old connection sends after the source gave up on it; the
/// reconnection answered 204, 500, a redirect to another host, or a page that is no event
/// stream ends the source as each should.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct EventSourceReconnectAttackTests {
    static let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: max-age=3600\r\nETag: \"v1\"\r\n"
        + "Transfer-Encoding: chunked\r\n"

    static func chunk(_ text: String) -> String { String(text.utf8.count, radix: 16) + "\r\n" + text + "\r\n" }

    static func field(_ name: String, in request: String) -> String? {
        let line = request.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
        return line.map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
    }

    /// Collects the delays of the source's reconnections.
    final class Waits: Plugin, @unchecked Sendable {
        let delays = Recorder<TimeInterval>()
        func observe(_ event: PluginEvent, api: APIContext) {
            if case .didRetry(_, _, let delay) = event { delays.append(delay) }
        }
    }

    /// Signs every request with a bearer token.
    final class Signer: APIDelegate {
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer secret-token", forHTTPHeaderField: "Authorization")
        }
    }

    /// How the server answers the reconnection.
    enum Answer: String, CaseIterable, Sendable { case events, noContent, serverError, redirectAway, notAnEventStream }

    /// A server whose first connection sends an event, with a cookie and `retry: 700`, then
    /// goes quiet until the source has reconnected, and then sends a late event on it; the
    /// second answers as `answer` says; any later one, 204.
    final class QuietServer: Sendable {
        let requests = Recorder<String>()
        let lateSent = Recorder<Bool>()
        let raw: RawServer

        init(answer: Answer, away: String) throws {
            let requests = requests
            let lateSent = lateSent
            let reconnected = DispatchSemaphore(value: 0)
            raw = try RawServer { connection in
                guard let request = connection.readRequest() else { return }
                requests.append(request)
                switch requests.items.count {
                case 1:
                    connection.send(EventSourceReconnectAttackTests.head + "Set-Cookie: session=home-secret; Path=/\r\n\r\n"
                                    + EventSourceReconnectAttackTests.chunk("retry: 700\nid: 7\ndata: a\n\n"))
                    // Quiet until the source gave up and came back; then late bytes, and the end.
                    guard reconnected.wait(timeout: .now() + 30) == .success else { return }
                    let sent = connection.send(EventSourceReconnectAttackTests.chunk("id: 99\ndata: late\n\n"))
                    lateSent.append(sent)
                    connection.pause(300)
                    connection.send("0\r\n\r\n")
                    connection.pause(300)
                case 2:
                    reconnected.signal()
                    // The late bytes go out on the old connection before this answers.
                    connection.pause(300)
                    switch answer {
                    case .events:
                        connection.send(EventSourceReconnectAttackTests.head + "\r\n" + EventSourceReconnectAttackTests.chunk("id: 8\ndata: b\n\n") + "0\r\n\r\n")
                    case .noContent:
                        connection.send("HTTP/1.1 204 No Content\r\n\r\n")
                    case .serverError:
                        connection.send("HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"error\":\"500\"}")
                    case .redirectAway:
                        connection.send("HTTP/1.1 307 Temporary Redirect\r\nLocation: \(away)/elsewhere\r\nContent-Length: 0\r\n\r\n")
                    case .notAnEventStream:
                        connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 18\r\n\r\n<html>login</html>")
                    }
                default:
                    connection.send("HTTP/1.1 204 No Content\r\n\r\n")
                }
            }
        }

        deinit { raw.stop() }
    }

    enum CacheKind: String, CaseIterable, Sendable { case memory, disk }

    @Test(arguments: Answer.allCases, CacheKind.allCases)
    func aSourceThatWentIdleReconnectsAndNeverReadsTheOldConnection(answer: Answer, cacheKind: CacheKind) async throws {
        let awayRequests = Recorder<String>()
        let away = try RawServer { connection in
            guard let request = connection.readRequest() else { return }
            awayRequests.append(request)
            connection.send(Self.head + "\r\n" + Self.chunk("id: 20\ndata: away\n\n") + "0\r\n\r\n")
        }
        defer { away.stop() }
        // Another host: the same machine by its name.
        let awayURL = "http://localhost:\(away.port)"
        let server = try QuietServer(answer: answer, away: awayURL)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-sse-idle-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = try cacheKind == .memory ? HTTPCache() : HTTPCache(directory: directory)
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, cache: cache), transport: TestTransport.make(),
                              responseQueue: .global())
        api.delegate = Signer()
        let waits = Waits()
        let source = api.events(route: .get(server.raw.baseURL + "/changes"),
                                options: RequestOptions(plugins: [waits], streamIdleTimeout: 1.5),
                                reconnection: EventReconnection(delay: 20))
        var events: [ServerSentEvent] = []
        var failure: (any Error)?
        do {
            for try await event in source { events.append(event) }
        } catch {
            failure = error
        }
        let requests = server.requests.items
        // The late event on the given-up connection is never read, whatever comes after.
        #expect(!events.contains { $0.data == "late" || $0.lastEventID == "99" }, "\(events)")
        #expect(events.first == ServerSentEvent(data: "a", lastEventID: "7"))
        // The reconnection waited the server's 700 ms, not the source's 20 s: doubled once, less
        // up to half at random, the idle timeout being a failed attempt (an error, however many
        // events came before it). After a connection the server ended, the 700 ms as they are.
        let delays = waits.delays.items
        #expect(delays.first.map { (0.7...1.4).contains($0) } == true, "\(delays)")
        #expect(delays.dropFirst().allSatisfy { $0 == 0.7 }, "\(delays)")
        try #require(requests.count >= 2)
        #expect(Self.field("Last-Event-ID", in: requests[1]) == "7")
        #expect(Self.field("Cookie", in: requests[1]) == "session=home-secret")
        #expect(Self.field("Authorization", in: requests[1]) == "Bearer secret-token")
        // Neither connection was conditional: the stream is not revalidated from the cache.
        #expect(requests.allSatisfy { Self.field("If-None-Match", in: $0) == nil }, "\(requests)")
        switch answer {
        case .events:
            #expect(failure == nil)
            #expect(events == [ServerSentEvent(data: "a", lastEventID: "7"), ServerSentEvent(data: "b", lastEventID: "8")])
            #expect(requests.count == 3)
            if requests.count == 3 { #expect(Self.field("Last-Event-ID", in: requests[2]) == "8") }
        case .noContent:
            #expect(failure == nil)
            #expect(events.count == 1)
            #expect(requests.count == 2)
        case .serverError:
            guard case .unacceptableStatus(let status)? = failure as? APIError else { Issue.record("got \(String(describing: failure))"); break }
            #expect(status.statusCode == 500)
            #expect(events.count == 1)
        case .notAnEventStream:
            guard case .parsingFailed(let parsing)? = failure as? APIError else { Issue.record("got \(String(describing: failure))"); break }
            #expect(parsing.underlying is NotAnEventStream)
            #expect(String(decoding: parsing.bodySnippet, as: UTF8.self) == "<html>login</html>")
            #expect(events.count == 1)
        case .redirectAway:
            #expect(failure == nil, "\(String(describing: failure))")
            #expect(events == [ServerSentEvent(data: "a", lastEventID: "7"), ServerSentEvent(data: "away", lastEventID: "20")])
            let stolen = try #require(awayRequests.items.first)
            #expect(Self.field("Authorization", in: stolen) == nil, "\(stolen)")
            #expect(Self.field("Cookie", in: stolen) == nil, "\(stolen)")
            #expect(Self.field("Last-Event-ID", in: stolen) == "7")
        }
        // The old connection's late bytes were written once the source had come back.
        #expect(await eventually { server.lateSent.items.count == 1 })
        // Another source on the same URL, through the same cache: the server's, not a kept answer.
        let before = server.requests.items.count
        var again = api.events(route: .get(server.raw.baseURL + "/changes"), reconnection: EventReconnection(delay: 20)).makeAsyncIterator()
        _ = try? await again.next()
        #expect(server.requests.items.count == before + 1)
    }
}
