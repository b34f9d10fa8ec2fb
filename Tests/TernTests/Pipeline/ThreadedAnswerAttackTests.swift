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

        init(returnsAfter: Int, _ steps: [Step]) {
            self.returnsAfter = returnsAfter
            super.init(.otherThread, answers: [steps])
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

    /// Each point, with a plugin and without.
    static let pointsWithPlugin = Point.allCases.flatMap { point in [false, true].map { (point, $0) } }

    static func steps(_ hook: Hook? = nil, at point: Point = .beforeTheHead) -> [Step] {
        var steps: [Step] = [.head(200), .chunk("a\n"), .chunk("b\n"), .end()]
        if let hook { steps.insert(.run(hook), at: [Point.beforeTheHead: 0, .afterTheHead: 1, .afterAChunk: 2, .afterTheEnd: 4][point]!) }
        return steps
    }

    @Test(arguments: returnPoints, Reading.allCases) func answeredWhileSendRuns(returnsAfter: Int, reading: Reading) async throws {
        let configuration = Self.configuration(reading)
        try await Self.inDirectory { directory in
            try await Self.attack(Racing(returnsAfter: returnsAfter, Self.steps()), configuration) { api, _ in
                let read = try await Self.read(reading, from: api, in: directory)
                #expect(read.flatMap { try? $0.get() } == "a\nb\n", "\(String(describing: read))")
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

    @Test(arguments: returnPoints, pointsWithPlugin)
    func aStreamLeftFromTheTransportsThread(returnsAfter: Int, at: (point: Point, withPlugin: Bool)) async throws {
        let (point, withPlugin) = at
        let hook = Hook()
        let configuration = APIConfiguration(timeout: 10, retryPolicy: .never, plugins: withPlugin ? [Watching()] : [])
        try await Self.attack(Racing(returnsAfter: returnsAfter, Self.steps(hook, at: point)), configuration) { api, _ in
            let reader = Task.onTestThreads {
                var lines: [String] = []
                for try await line in api.stream(route: .get(Self.url)).lines { lines.append(line) }
                return lines
            }
            hook.set { reader.cancel() }
            let ended = try await Self.within { await reader.result }
            #expect(ended != nil, "the reader did not end")
            if case .failure(let error)? = ended { #expect(error is APIError, "\(error)") }
        }
        await Self.expectStreamEndsMatchHeads(configuration)
    }

    @Test(arguments: returnPoints, pointsWithPlugin)
    func aStreamCancelledFromTheTransportsThread(returnsAfter: Int, at: (point: Point, withPlugin: Bool)) async throws {
        let (point, withPlugin) = at
        let hook = Hook()
        let configuration = APIConfiguration(timeout: 10, retryPolicy: .never, plugins: withPlugin ? [Watching()] : [])
        try await Self.attack(Racing(returnsAfter: returnsAfter, Self.steps(hook, at: point)), configuration) { api, _ in
            let stream = api.stream(route: .get(Self.url))
            hook.set { stream.cancel() }
            try await Self.expectEnds(stream)
            await Self.settlesOnceTyped(stream.response, cancelled: point == .beforeTheHead)
        }
        await Self.expectStreamEndsMatchHeads(configuration)
    }
}
