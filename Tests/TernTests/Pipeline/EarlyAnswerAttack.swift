import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tern

/// What the early-answer attack suites share: an API over a hostile transport, and the checks
/// that each promise settles once, typed, and that the API and transport are let go.
protocol EarlyAnswerAttack {}

extension EarlyAnswerAttack {
    typealias Item = EarlyAnswer.Item
    typealias Watching = EarlyAnswer.Watching
    typealias Signing = EarlyAnswer.Signing
    typealias Step = EarlyAnswer.Step
    typealias Place = EarlyAnswer.Place
    typealias CancelStyle = EarlyAnswer.CancelStyle
    typealias Hook = EarlyAnswer.Hook
    typealias Hostile = EarlyAnswer.Hostile
    typealias HeldTask = EarlyAnswer.HeldTask
    typealias Disorder = EarlyAnswer.Disorder
    typealias Reading = EarlyAnswer.Reading
    typealias Stopper = EarlyAnswer.Stopper
    typealias Point = EarlyAnswer.Point
    typealias EchoesPath = EarlyAnswer.EchoesPath

    static var url: String { "https://early.invalid/thing" }

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
    /// A bound for hangs, not a timing: a stream read 8 bytes at a time through a pausing
    /// transport once took over 10 s under the thread sanitizer on a loaded machine.
    static func within<Value: Sendable>(_ seconds: TimeInterval = 30, _ body: @escaping @Sendable () async throws -> Value) async throws -> Value? {
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

    /// Whether `stream`, read as lines, ends within 30 s, complete or with a typed error.
    static func expectEnds(_ stream: ResponseStream, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let ended = try await within {
            do {
                var lines: [String] = []
                for try await line in stream.lines { lines.append(line) }
                return "complete: \(lines)"
            } catch let error as APIError {
                return "failed: \(error)"
            } catch {
                return "untyped: \(error)"
            }
        }
        #expect(ended != nil, "the stream did not end", sourceLocation: sourceLocation)
        #expect(ended?.hasPrefix("untyped") != true, "\(ended ?? "")", sourceLocation: sourceLocation)
    }

    /// Reads a stream of `url` as lines in a task that `hook` cancels: the reader ends within
    /// 30 s, complete or with a typed error.
    static func expectReaderEnds(cancelledBy hook: Hook, api: AbstractAPI, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let url = url
        let reader = Task.onTestThreads {
            var lines: [String] = []
            for try await line in api.stream(route: .get(url)).lines { lines.append(line) }
            return lines
        }
        hook.set { reader.cancel() }
        let ended = try await within { await reader.result }
        #expect(ended != nil, "the reader did not end", sourceLocation: sourceLocation)
        if case .failure(let error)? = ended { #expect(error is APIError, "\(error)", sourceLocation: sourceLocation) }
    }

    /// The lines of a stream of `route`, read to the end within 30 s.
    static func lines(of api: AbstractAPI, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String]? {
        let url = url
        let lines = try await within {
            var lines: [String] = []
            for try await line in api.stream(route: .get(url)).lines { lines.append(line) }
            return lines
        }
        #expect(lines != nil, "the stream did not end", sourceLocation: sourceLocation)
        return lines
    }

    /// The body of `url` read as `reading` says, or the error that ended it; `nil` if it did
    /// not end within 30 s.
    static func read(_ reading: Reading, from api: AbstractAPI, url: String? = nil, in directory: URL) async throws -> Result<String, APIError>? {
        let url = url ?? Self.url
        return try await within {
            do {
                switch reading {
                case .request:
                    return .success(try await (api.request(route: .get(url)) as Promise<String>).value)
                case .download:
                    let file = try await api.download(route: .get(url), to: directory.appendingPathComponent(UUID().uuidString)).value
                    return .success(String(decoding: try Data(contentsOf: file.fileURL), as: UTF8.self))
                case .stream, .streamWithPlugin:
                    var text = ""
                    for try await chunk in api.stream(route: .get(url)) { text += String(decoding: chunk, as: UTF8.self) }
                    return .success(text)
                }
            } catch let error as APIError {
                return .failure(error)
            }
        }
    }

    static func configuration(_ reading: Reading, timeout: TimeInterval = 10, retryPolicy: RetryPolicy = .never) -> APIConfiguration {
        APIConfiguration(timeout: timeout, retryPolicy: retryPolicy, plugins: reading == .streamWithPlugin ? [Watching()] : [])
    }

    /// A directory for downloads, removed after `body`.
    static func inDirectory<Result>(_ body: (URL) async throws -> Result) async throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-early-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: directory) }
        return try await body(directory)
    }
}

extension EarlyAnswer {
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

    /// Signs each request with the current token ("t1", "t2", …), and refreshes it on a 401.
    typealias Signing = EventSourceTests.CountingTokens

    /// Events a transport must not report, each whole inside `send`.
    enum Disorder: String, Sendable, CaseIterable {
        case chunkAfterTheEnd, secondEnd, failedEndAfterTheEnd, headTwice, chunkBeforeTheHead, chunksAfterStop

        var steps: [Step] {
            switch self {
            case .chunkAfterTheEnd: [.head(200), .chunk("a\n"), .end(), .chunk("late\n")]
            case .secondEnd: [.head(200), .chunk("a\n"), .end(), .end()]
            case .failedEndAfterTheEnd: [.head(200), .chunk("a\n"), .end(), .end(.networkConnectionLost)]
            case .headTwice: [.head(200), .head(200), .chunk("a\n"), .end()]
            case .chunkBeforeTheHead: [.chunk("early\n"), .head(200), .chunk("a\n"), .end()]
            // Past the 4-byte limit of the request (a stream has none).
            case .chunksAfterStop: [.head(200), .chunk("a\n"), .chunk("too much\n"), .chunk("more\n"), .end()]
            }
        }
    }

    /// What is read: a request's body, a download's file, a stream's lines (its head judged
    /// where it comes, or, with a plugin, elsewhere).
    enum Reading: String, Sendable, CaseIterable {
        case request, download, stream, streamWithPlugin
    }

    /// The pipeline cancels a task that has not ended: the request timed out, or was cancelled,
    /// or its stream's reader left; the task reports the end inside `cancel()`.
    enum Stopper: String, Sendable, CaseIterable {
        case timeout, promiseCancel, readerLeaves, streamCancel
    }

    /// Where, among the events reported inside `send`, the request is cancelled or the reader
    /// leaves.
    enum Point: String, Sendable, CaseIterable {
        case beforeTheHead, afterTheHead, afterAChunk, afterTheEnd
    }
}
