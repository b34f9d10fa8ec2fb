import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tern

/// Transports that answer early, late and out of order: whole inside `send`, before it returns
/// its task; from another thread while `send` waits; after their own end; with a task whose
/// `cancel()` reports the end inside it. Whatever they do, each promise settles once, with the
/// answer or a typed ``APIError``, nothing hangs or crashes, and the API and its transport are
/// let go afterwards. (Two bugs of this kind were found: a head before the task cancelled its
/// stream, and a stream ended before its task kept it, its API and its transport for ever.)
@Suite(.onTestThreads, .timeLimit(.minutes(1)))
struct EarlyAnswerAttackTests: EarlyAnswerAttack {
    // MARK: Answered whole before the task comes

    @Test(arguments: Place.allCases) func aPlainRequest(place: Place) async throws {
        try await Self.attack(Hostile(place, [.head(200), .chunk("he"), .chunk("llo"), .end()])) { api, _ in
            let body = await Self.value(of: api.request(route: .get(Self.url)) as Promise<Data>)
            #expect(body == Data("hello".utf8))
        }
    }

    @Test(arguments: Place.allCases) func aDecodedRequest(place: Place) async throws {
        try await Self.attack(Hostile(place, [.head(200, ["Content-Type": "application/json"]), .chunk("{\"id\""), .chunk(":7}"), .end()])) { api, _ in
            let item = await Self.value(of: api.request(route: .get(Self.url)) as Promise<Item>)
            #expect(item == Item(id: 7))
        }
    }

    @Test(arguments: Place.allCases) func aDownload(place: Place) async throws {
        let destination = FileManager.default.temporaryDirectory.appendingPathComponent("tern-early-\(UUID())")
        defer { try? FileManager.default.removeItem(at: destination) }
        try await Self.attack(Hostile(place, [.head(200, ["Content-Length": "8"]), .chunk("down"), .chunk("load"), .end()])) { api, _ in
            let file = await Self.value(of: api.download(route: .get(Self.url), to: destination))
            #expect(file.map { try? Data(contentsOf: $0.fileURL) } == Data("download".utf8))
        }
    }

    @Test(arguments: Place.allCases, [false, true]) func aStreamReadAsLines(place: Place, withPlugin: Bool) async throws {
        let configuration = APIConfiguration(timeout: 10, retryPolicy: .never, plugins: withPlugin ? [Watching()] : [])
        try await Self.attack(Hostile(place, [.head(200), .chunk("one\ntw"), .chunk("o\n"), .end()]), configuration) { api, _ in
            let lines = try await Self.lines(of: api)
            #expect(lines == ["one", "two"])
        }
        for case let watching as Watching in configuration.plugins { await Self.expectOneStreamEnd(watching) }
    }

    @Test(arguments: Place.allCases, [false, true]) func aStreamReadAsEvents(place: Place, withPlugin: Bool) async throws {
        let configuration = APIConfiguration(timeout: 10, retryPolicy: .never, plugins: withPlugin ? [Watching()] : [])
        let steps: [Step] = [.head(200, ["Content-Type": "text/event-stream"]), .chunk("data: a\n\n"), .chunk("data: b\n\n"), .end()]
        try await Self.attack(Hostile(place, steps), configuration) { api, _ in
            let events = try await Self.within {
                var events: [String] = []
                for try await event in api.stream(route: .get(Self.url)).events { events.append(event.data) }
                return events
            }
            #expect(events == ["a", "b"])
        }
        for case let watching as Watching in configuration.plugins { await Self.expectOneStreamEnd(watching) }
    }

    /// Each connection answered whole before its task came; the source reconnects once.
    @Test(arguments: Place.allCases, [false, true]) func anEventSource(place: Place, withPlugin: Bool) async throws {
        let configuration = APIConfiguration(timeout: 10, retryPolicy: .never, plugins: withPlugin ? [Watching()] : [])
        let steps: [Step] = [.head(200, ["Content-Type": "text/event-stream"]), .chunk("id: 1\ndata: a\n\n"), .chunk("data: b\n\n"), .end()]
        try await Self.attack(Hostile(place, steps), configuration) { api, transport in
            let events = try await Self.within(20) {
                var events: [String] = []
                for try await event in api.events(route: .get(Self.url), reconnection: EventReconnection(delay: 0.5)) {
                    events.append(event.data)
                    if events.count == 3 { break }
                }
                return events
            }
            #expect(events == ["a", "b", "a"])
            #expect(transport.requests.items.last?.value(forHTTPHeaderField: "Last-Event-ID") == "1")
        }
    }

    /// Signed, refused with a 401, refreshed and signed again: each answer whole in `send`.
    @Test(arguments: Place.allCases, [false, true]) func aRequestRefreshedOn401(place: Place, streamed: Bool) async throws {
        let watching = Watching()
        let configuration = APIConfiguration(timeout: 10, retryPolicy: .never, plugins: [watching])
        try await Self.attack(Hostile(place, answers: [[.head(401), .chunk("no\n"), .end()], [.head(200), .chunk("yes\n"), .end()]]), configuration,
                              delegate: Signing()) { api, transport in
            if streamed {
                let lines = try await Self.lines(of: api)
                #expect(lines == ["yes"])
            } else {
                #expect(await Self.value(of: api.request(route: .get(Self.url)) as Promise<String>) == "yes\n")
            }
            #expect(transport.requests.items.map { $0.value(forHTTPHeaderField: "Authorization") } == ["Bearer t1", "Bearer t2"])
        }
        if streamed { await Self.expectOneStreamEnd(watching) }
    }

    @Test(arguments: Place.allCases, [false, true]) func aRedirect(place: Place, streamed: Bool) async throws {
        try await Self.attack(Hostile(place, answers: [[.head(302, ["Location": "/next"]), .chunk("moved"), .end()], [.head(200), .chunk("here\n"), .end()]])) { api, transport in
            if streamed {
                let lines = try await Self.lines(of: api)
                #expect(lines == ["here"])
            } else {
                #expect(await Self.value(of: api.request(route: .get(Self.url)) as Promise<String>) == "here\n")
            }
            #expect(transport.requests.items.map { $0.url?.path } == ["/thing", "/next"])
        }
    }

    @Test(arguments: Place.allCases, [false, true]) func aRetryAfterAFailure(place: Place, streamed: Bool) async throws {
        let configuration = APIConfiguration(timeout: 10, retryPolicy: RetryPolicy(maxRetries: 1, baseDelay: 0.01, jitter: false))
        try await Self.attack(Hostile(place, answers: [[.head(200), .chunk("cut"), .end(.networkConnectionLost)], [.head(200), .chunk("whole\n"), .end()]]), configuration) { api, transport in
            if streamed {
                // A stream's head opens it: a failure after it is the stream's, not retried.
                let lines = try await Self.within {
                    do {
                        for try await _ in api.stream(route: .get(Self.url)).lines {}
                        return "complete"
                    } catch let error as APIError {
                        return "\(error)"
                    }
                }
                #expect(lines != nil && lines != "complete")
            } else {
                #expect(await Self.value(of: api.request(route: .get(Self.url)) as Promise<String>) == "whole\n")
                #expect(transport.requests.items.count == 2)
            }
        }
    }

    /// Kept, then revalidated: the server's 304 names another response, so the request goes
    /// again without its conditions, from inside the first `send`.
    @Test(arguments: Place.allCases) func aCachedRequest(place: Place) async throws {
        let configuration = APIConfiguration(timeout: 10, retryPolicy: .never, cache: HTTPCache())
        try await Self.attack(Hostile(place, answers: [
            [.head(200, ["Cache-Control": "max-age=60", "ETag": "\"a\""]), .chunk("kept"), .end()],
            [.head(200, ["Cache-Control": "no-cache", "ETag": "\"a\""]), .chunk("first"), .end()],
            [.head(304, ["ETag": "\"b\""]), .end()],
            [.head(200, ["ETag": "\"b\""]), .chunk("second"), .end()],
        ]), configuration) { api, transport in
            #expect(await Self.value(of: api.request(route: .get(Self.url)) as Promise<String>) == "kept")
            #expect(await Self.value(of: api.request(route: .get(Self.url)) as Promise<String>) == "kept")
            #expect(transport.requests.items.count == 1, "the second answered from the cache")
            let other = Self.url + "?other"
            #expect(await Self.value(of: api.request(route: .get(other)) as Promise<String>) == "first")
            #expect(await Self.value(of: api.request(route: .get(other)) as Promise<String>) == "second")
            #expect(transport.requests.items.count == 4)
        }
    }

    @Test(arguments: Place.allCases) func aRequestWithAPlugin(place: Place) async throws {
        let configuration = APIConfiguration(timeout: 10, retryPolicy: .never, plugins: [Watching()])
        try await Self.attack(Hostile(place, [.head(200), .chunk("{\"id\":3}"), .end()]), configuration) { api, _ in
            #expect(await Self.value(of: api.request(route: .get(Self.url)) as Promise<Item>) == Item(id: 3))
        }
    }
}
