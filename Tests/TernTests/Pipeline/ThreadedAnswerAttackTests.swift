import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tern

/// A hostile transport with a thread of its own that answers from it while `send` still runs:
/// `send` returns its task only once the thread has reported so many of its events, and the
/// thread goes on with the rest while the pipeline attaches the task. The request is cancelled,
/// or the stream's reader leaves, at each point of the answer. Each promise settles once, typed,
/// each stream ends, and the API and its transport are let go.
@Suite(.onTestThreads, .timeLimit(.minutes(1)))
struct ThreadedAnswerAttackTests: EarlyAnswerAttack {
    /// Plays each attempt's steps on a thread of its own, and returns the task from `send` once
    /// the thread has reported the first `returnsAfter` of them.
    final class Racing: Hostile, @unchecked Sendable {   // unchecked: as its base, its state is `let`s
        let returnsAfter: Int

        init(returnsAfter: Int, answers: [[Step]]) {
            self.returnsAfter = returnsAfter
            super.init(.otherThread, answers: answers)
        }

        convenience init(returnsAfter: Int, _ steps: [Step]) {
            self.init(returnsAfter: returnsAfter, answers: [steps])
        }

        override func send(_ request: TransportRequest, to receiver: any TransportReceiver, steps: [Step]) -> any TransportTask {
            let task = HeldTask(transport: self, receiver: receiver, url: request.urlRequest.url!)
            let returns = DispatchSemaphore(value: 0)
            let reached = Hook()
            reached.set { returns.signal() }
            var steps = steps
            steps.insert(.run(reached), at: min(returnsAfter, steps.count))
            let played = steps
            Thread { task.play(played) {} }.start()
            _ = returns.wait(timeout: .now() + 10)
            return task
        }
    }

    /// How many of the answer's events the thread reports before `send` returns: none, the head,
    /// a chunk, both chunks, the end.
    static let returnPoints = [0, 1, 2, 3, 4]

    /// Each point, with a plugin and without, the reader leaving or the stream cancelled.
    static let streamStops = Point.allCases.flatMap { point in
        [false, true].flatMap { withPlugin in [false, true].map { (point, withPlugin, $0) } }
    }

    static func steps(_ hook: Hook, at point: Point) -> [Step] {
        EarlyAnswerAttackLateTests.steps(cancellingAt: point, hook)
    }

    @Test(arguments: returnPoints, Reading.allCases) func answeredWhileSendRuns(returnsAfter: Int, reading: Reading) async throws {
        let configuration = Self.configuration(reading)
        try await Self.inDirectory { directory in
            try await Self.attack(Racing(returnsAfter: returnsAfter, [.head(200), .chunk("a\n"), .chunk("b\n"), .end()]), configuration) { api, _ in
                let read = try await Self.read(reading, from: api, in: directory)
                #expect(read.flatMap { try? $0.get() } == "a\nb\n", "\(String(describing: read))")
            }
        }
        await Self.expectStreamEndsMatchHeads(configuration)
    }

    /// Redirected, or retried after a connection lost midway (a stream's head has opened it by
    /// then: its failure is the stream's), each attempt answered while its `send` runs.
    @Test(arguments: returnPoints, Reading.allCases) func aRedirectAndARetryAnsweredWhileSendRuns(returnsAfter: Int, reading: Reading) async throws {
        let configuration = Self.configuration(reading, retryPolicy: RetryPolicy(maxRetries: 1, baseDelay: 0.01, jitter: false))
        let answers: [[Step]] = [[.head(302, ["Location": "/next"]), .chunk("moved"), .end()],
                                 [.head(200), .chunk("cut"), .end(.networkConnectionLost)],
                                 [.head(200), .chunk("a\n"), .chunk("b\n"), .end()]]
        try await Self.inDirectory { directory in
            try await Self.attack(Racing(returnsAfter: returnsAfter, answers: answers), configuration) { api, transport in
                let read = try await Self.read(reading, from: api, in: directory)
                switch (reading, read) {
                case (.request, .success("a\nb\n")?), (.download, .success("a\nb\n")?): #expect(transport.requests.items.count == 3)
                case (.stream, .failure(.transportFailed)?), (.streamWithPlugin, .failure(.transportFailed)?): break
                default: Issue.record("\(reading): \(String(describing: read))")
                }
            }
        }
        await Self.expectStreamEndsMatchHeads(configuration)
    }

    @Test(arguments: returnPoints, Point.allCases) func aRequestCancelledFromTheTransportsThread(returnsAfter: Int, point: Point) async throws {
        let hook = Hook()
        try await Self.attack(Racing(returnsAfter: returnsAfter, Self.steps(hook, at: point))) { api, _ in
            let promise: Promise<String> = api.request(route: .get(Self.url))
            hook.set { promise.cancel() }
            await Self.settlesOnceTyped(promise, cancelled: point != .afterTheEnd)
        }
    }

    @Test(arguments: returnPoints, Point.allCases) func aDownloadCancelledFromTheTransportsThread(returnsAfter: Int, point: Point) async throws {
        let hook = Hook()
        try await Self.inDirectory { directory in
            try await Self.attack(Racing(returnsAfter: returnsAfter, Self.steps(hook, at: point))) { api, _ in
                let promise = api.download(route: .get(Self.url), to: directory.appendingPathComponent("file"))
                hook.set { promise.cancel() }
                await Self.settlesOnceTyped(promise, cancelled: point != .afterTheEnd)
                let delivered = if case .success? = await Self.results(of: promise).first { true } else { false }
                let left: @Sendable () -> [String] = { (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] }
                #expect(await eventually(timeout: 10) { left() == (delivered ? ["file"] : []) }, "left \(left())")
            }
        }
    }

    /// A stream whose reader leaves (its task cancelled), or that is cancelled, at each point.
    @Test(arguments: returnPoints, streamStops)
    func aStreamStoppedFromTheTransportsThread(returnsAfter: Int, at: (point: Point, withPlugin: Bool, readerLeaves: Bool)) async throws {
        let hook = Hook()
        let configuration = APIConfiguration(timeout: 10, retryPolicy: .never, plugins: at.withPlugin ? [Watching()] : [])
        try await Self.attack(Racing(returnsAfter: returnsAfter, Self.steps(hook, at: at.point)), configuration) { api, _ in
            guard !at.readerLeaves else { return try await Self.expectReaderEnds(cancelledBy: hook, api: api) }
            let stream = api.stream(route: .get(Self.url))
            hook.set { stream.cancel() }
            try await Self.expectEnds(stream)
            await Self.settlesOnceTyped(stream.response, cancelled: at.point == .beforeTheHead)
        }
        await Self.expectStreamEndsMatchHeads(configuration)
    }
}
