import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tern

/// Events out of order, cancels inside `cancel()`, and a cancel or the reader leaving at each
/// point of an answer given before the task came.
@Suite(.onTestThreads, .timeLimit(.minutes(1)))
struct EarlyAnswerAttackLateTests: EarlyAnswerAttack {
    /// Each disorder with each reading.
    static let disorders = Disorder.allCases.flatMap { disorder in Reading.allCases.map { (disorder, $0) } }

    @Test(arguments: disorders) func eventsOutOfOrder(disorder: Disorder, reading: Reading) async throws {
        let configuration = APIConfiguration(timeout: 10, maximumResponseSize: 4, retryPolicy: .never,
                                             plugins: reading == .streamWithPlugin ? [Watching()] : [])
        let destination = FileManager.default.temporaryDirectory.appendingPathComponent("tern-early-\(UUID())")
        defer { try? FileManager.default.removeItem(at: destination) }
        try await Self.attack(Hostile(.inside, unruly: true, disorder.steps), configuration) { api, _ in
            switch reading {
            case .request:
                let promise: Promise<String> = api.request(route: .get(Self.url))
                let results = await Self.results(of: promise)
                #expect(results.count == 1)
                switch results.first {
                // A chunk before the head would cut the body short unseen: it fails, as below.
                case .success(let body)?: #expect(body == "a\n" && disorder != .chunkBeforeTheHead, "\(body)")
                // A second head, or a chunk before the first, is the transport's error: the exchange ends with it.
                case .failure(let error as APIError)?:
                    #expect([.chunksAfterStop, .chunkBeforeTheHead, .headTwice].contains(disorder), "\(error)")
                case .failure(let error)?: Issue.record("untyped: \(error)")
                case nil: break
                }
            case .download:
                await Self.settlesOnceTyped(api.download(route: .get(Self.url), to: destination, maximumSize: 4))
            case .stream, .streamWithPlugin:
                try await Self.expectEnds(api.stream(route: .get(Self.url)))
            }
        }
        if reading == .streamWithPlugin { await Self.expectStreamEndsMatchHeads(configuration) }
    }

    // MARK: A task whose cancel reports the end inside it

    @Test(arguments: Stopper.allCases, [false, true]) func aCancelThatEndsInside(stopper: Stopper, withPlugin: Bool) async throws {
        let configuration = APIConfiguration(timeout: stopper == .timeout ? 1 : 10, retryPolicy: .never,
                                             plugins: withPlugin ? [Watching()] : [])
        // Never ends of itself.
        try await Self.attack(Hostile(.inside, [.head(200), .chunk("a\n")]), configuration) { api, transport in
            switch stopper {
            case .timeout:
                let results = await Self.results(of: api.request(route: .get(Self.url)) as Promise<Data>)
                #expect(results.count == 1)
                if case .failure(APIError.timeout)? = results.first {} else { Issue.record("\(results)") }
            case .promiseCancel:
                let promise: Promise<Data> = api.request(route: .get(Self.url))
                #expect(await eventually(timeout: 10) { !transport.requests.items.isEmpty })
                promise.cancel()
                let results = await Self.results(of: promise)
                #expect(results.count == 1)
                if case .failure(APIError.cancelled)? = results.first {} else { Issue.record("\(results)") }
            case .readerLeaves, .streamCancel:
                let stream = api.stream(route: .get(Self.url))
                let first = try await Self.within { () async throws -> String? in
                    for try await line in stream.lines { return line }
                    return nil
                }
                #expect(first == "a")
                if stopper == .streamCancel {
                    stream.cancel()
                    let after = try await Self.within { try await stream.response.value }
                    #expect(after?.statusCode == 200)
                }
            }
            #expect(await eventually(timeout: 10) { transport.cancels.items.count >= 1 }, "the task was never cancelled")
        }
        await Self.expectStreamEndsMatchHeads(configuration)
    }

    /// A task whose every cancel reports an end, after the exchange's own end too.
    @Test(arguments: Place.allCases, [false, true]) func aCancelThatEndsAgainAfterTheEnd(place: Place, streamed: Bool) async throws {
        try await Self.attack(Hostile(place, unruly: true, [.head(200), .chunk("a\n"), .end()])) { api, _ in
            if streamed {
                let lines = try await Self.lines(of: api)
                #expect(lines == ["a"])
            } else {
                #expect(await Self.value(of: api.request(route: .get(Self.url)) as Promise<String>) == "a\n")
            }
        }
    }

    // MARK: Cancelled at each point

    static func steps(cancellingAt point: Point, _ hook: Hook) -> [Step] {
        var steps: [Step] = [.head(200), .chunk("a\n"), .chunk("b\n"), .end()]
        steps.insert(.run(hook), at: [Point.beforeTheHead: 0, .afterTheHead: 1, .afterAChunk: 2, .afterTheEnd: 4][point]!)
        return steps
    }

    @Test(arguments: Point.allCases, Place.allCases) func aRequestCancelledAt(point: Point, place: Place) async throws {
        let hook = Hook()
        try await Self.attack(Hostile(place, Self.steps(cancellingAt: point, hook))) { api, _ in
            let promise: Promise<String> = api.request(route: .get(Self.url))
            hook.set { promise.cancel() }
            await Self.settlesOnceTyped(promise, cancelled: point != .afterTheEnd)
        }
    }

    @Test(arguments: Point.allCases, [false, true]) func aStreamCancelledAt(point: Point, withPlugin: Bool) async throws {
        let hook = Hook()
        let configuration = APIConfiguration(timeout: 10, retryPolicy: .never, plugins: withPlugin ? [Watching()] : [])
        try await Self.attack(Hostile(.inside, Self.steps(cancellingAt: point, hook)), configuration) { api, _ in
            let stream = api.stream(route: .get(Self.url))
            hook.set { stream.cancel() }
            try await Self.expectEnds(stream)
        }
        await Self.expectStreamEndsMatchHeads(configuration)
    }

    /// The reader's task is cancelled while `send` reports the answer, at each point.
    @Test(arguments: Point.allCases, [false, true]) func aStreamsReaderCancelledAt(point: Point, withPlugin: Bool) async throws {
        let hook = Hook()
        let configuration = APIConfiguration(timeout: 10, retryPolicy: .never, plugins: withPlugin ? [Watching()] : [])
        try await Self.attack(Hostile(.inside, Self.steps(cancellingAt: point, hook)), configuration) { api, _ in
            try await Self.expectReaderEnds(cancelledBy: hook, api: api)
        }
        await Self.expectStreamEndsMatchHeads(configuration)
    }
}

extension EarlyAnswerAttackLateTests {
    /// A download cancelled at each point leaves nothing beside its destination (the answer has
    /// no validator to resume by), and the file only when it was delivered.
    @Test(arguments: Point.allCases, Place.allCases) func aDownloadCancelledAt(point: Point, place: Place) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-early-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: directory) }
        let hook = Hook()
        try await Self.attack(Hostile(place, Self.steps(cancellingAt: point, hook))) { api, _ in
            let promise = api.download(route: .get(Self.url), to: directory.appendingPathComponent("file"))
            hook.set { promise.cancel() }
            let results = await Self.results(of: promise)
            #expect(results.count == 1)
            let delivered = if case .success = results.first { true } else { false }
            if case .failure(let error)? = results.first {
                if case APIError.cancelled = error {} else { Issue.record("failed with \(error), not as cancelled") }
            }
            #expect(point == .afterTheEnd || !delivered)
            let left: @Sendable () -> [String] = { (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] }
            #expect(await eventually(timeout: 10) { left() == (delivered ? ["file"] : []) }, "left \(left())")
        }
    }
}
