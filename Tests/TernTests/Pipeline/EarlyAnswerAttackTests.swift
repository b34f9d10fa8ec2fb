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
struct EarlyAnswerAttackTests {
    static let url = "https://early.invalid/thing"

    struct Item: Decodable, Sendable, Equatable {
        let id: Int
    }

    /// A plugin that notes what it hears: a stream's head is then judged off the transport's
    /// thread, and an end handled on the pipeline's queue.
    struct Watching: Plugin {
        let events = Recorder<String>()

        func observe(_ event: PluginEvent, api: APIContext) {
            switch event {
            case .willSend: events.append("willSend")
            case .didReceive(let result, let request):
                events.append("didReceive")
                // A stream's request asks for anything; its 2xx head opens it.
                if case .success(let response) = result, (200..<300).contains(response.statusCode),
                   request.value(forHTTPHeaderField: "Accept") == "*/*" { events.append("opened") }
            case .didEndStream: events.append("didEndStream")
            case .didRetry: events.append("didRetry")
            case .didRefresh: events.append("didRefresh")
            case .didFail: events.append("didFail")
            }
        }

        func count(_ name: String) -> Int { events.items.filter { $0 == name }.count }
    }

    /// Signs each request with the current token, and refreshes it on a 401.
    final class Signing: APIDelegate {
        let token = Locked(1)
        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer \(token.withLock { $0 })", forHTTPHeaderField: "Authorization")
        }
        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            token.withLock { $0 += 1 }
            return Promise(value: (), in: .global())
        }
    }

    // MARK: Running an attack

    /// Runs `body` with an API over `transport`, then checks that both are let go once `body`
    /// has returned (nothing else holds them).
    static func attack(
        _ transport: @autoclosure () -> Hostile,
        _ configuration: APIConfiguration = APIConfiguration(timeout: 10, retryPolicy: .never),
        delegate: (any APIDelegate)? = nil,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ body: (AbstractAPI, Hostile) async throws -> Void
    ) async throws {
        let apiGone: WeakRef<AbstractAPI>
        let transportGone: WeakRef<Hostile>
        do {
            let transport = transport()
            let api = AbstractAPI(configuration: configuration, transport: transport, responseQueue: .global())
            api.delegate = delegate
            (apiGone, transportGone) = (WeakRef(api), WeakRef(transport))
            try await body(api, transport)
        }
        // Each attempt that went out is answered once, for plugins too.
        for case let watching as Watching in configuration.plugins {
            #expect(await eventually(timeout: 10) { watching.count("willSend") == watching.count("didReceive") },
                    "plugins heard \(watching.events.items)", sourceLocation: sourceLocation)
        }
        #expect(await eventually(timeout: 10) { apiGone.isFreed }, "the API outlived its requests", sourceLocation: sourceLocation)
        #expect(await eventually(timeout: 10) { transportGone.isFreed }, "the transport outlived its API", sourceLocation: sourceLocation)
    }

    /// What `promise` settled with, each time it did: empty when it did not within `seconds`.
    static func results<Value: Sendable>(of promise: Promise<Value>, within seconds: TimeInterval = 10) async -> [Result<Value, any Error>] {
        let results = Recorder<Result<Value, any Error>>()
        promise.onResult(in: .global()) { results.append($0) }
        _ = await eventually(timeout: seconds) { !results.items.isEmpty }
        return results.items
    }

    /// The value `promise` settled with, once, within 10 s; records why not otherwise.
    static func value<Value: Sendable>(of promise: Promise<Value>, sourceLocation: SourceLocation = #_sourceLocation) async -> Value? {
        let results = await results(of: promise)
        #expect(results.count == 1, "settled \(results.count) times", sourceLocation: sourceLocation)
        switch results.first {
        case .success(let value)?: return value
        case .failure(let error)?: Issue.record("failed: \(error)", sourceLocation: sourceLocation)
        case nil: break
        }
        return nil
    }

    /// Whether `promise` settled once within 10 s, with a value or a typed error (`cancelled`
    /// when `cancelled`); records why not otherwise.
    static func settlesOnceTyped<Value: Sendable>(_ promise: Promise<Value>, cancelled: Bool = false,
                                                  sourceLocation: SourceLocation = #_sourceLocation) async {
        let results = await results(of: promise)
        #expect(results.count == 1, "settled \(results.count) times", sourceLocation: sourceLocation)
        switch results.first {
        case .success?: break
        case .failure(APIError.cancelled)?: break
        case .failure(let error as APIError)?: #expect(!cancelled, "failed with \(error), not as cancelled", sourceLocation: sourceLocation)
        case .failure(let error)?: Issue.record("failed untyped: \(error)", sourceLocation: sourceLocation)
        case nil: break
        }
    }

    /// What `body` returns, or `nil` when it has not within `seconds` (it is then cancelled).
    static func within<Value: Sendable>(_ seconds: TimeInterval = 10, _ body: @escaping @Sendable () async throws -> Value) async throws -> Value? {
        try await withThrowingTaskGroup(of: Value?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    /// Whether the plugin heard exactly one stream end (soon: it is told on the pipeline's queue).
    static func expectOneStreamEnd(_ watching: Watching, sourceLocation: SourceLocation = #_sourceLocation) async {
        _ = await eventually(timeout: 10) { watching.count("didEndStream") > 0 }
        #expect(watching.count("didEndStream") == 1, "plugins heard \(watching.events.items)", sourceLocation: sourceLocation)
    }

    /// Whether the plugins heard one stream end for each head that opened a stream, none for a
    /// stream cancelled before its head.
    static func expectStreamEndsMatchHeads(_ configuration: APIConfiguration, sourceLocation: SourceLocation = #_sourceLocation) async {
        for case let watching as Watching in configuration.plugins {
            let matched = await eventually(timeout: 10) { watching.count("didEndStream") == watching.count("opened") }
            #expect(matched, "plugins heard \(watching.events.items)", sourceLocation: sourceLocation)
        }
    }

    /// The lines of a stream of `route`, read to the end within 10 s.
    static func lines(of api: AbstractAPI, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String]? {
        let lines = try await within {
            var lines: [String] = []
            for try await line in api.stream(route: .get(url)).lines { lines.append(line) }
            return lines
        }
        #expect(lines != nil, "the stream did not end", sourceLocation: sourceLocation)
        return lines
    }

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
            #expect(transport.requests.items.map { $0.value(forHTTPHeaderField: "Authorization") } == ["Bearer 1", "Bearer 2"])
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
