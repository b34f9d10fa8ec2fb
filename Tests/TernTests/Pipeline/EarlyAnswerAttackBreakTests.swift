import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tern

/// What the early-answer attacks broke, each test failing every run before 864a063.
@Suite(.onTestThreads, .timeLimit(.minutes(1)))
struct EarlyAnswerAttackBreakTests: EarlyAnswerAttack {
    /// Holds the first head's judging (inside the pipeline's report of it to plugins) until the
    /// second head has been judged, and a moment more, for the second judging to take the end.
    struct HoldsTheFirstHead: Plugin {
        let secondJudged: DispatchSemaphore

        func observe(_ event: PluginEvent, api: APIContext) {
            guard case .didReceive(.success, _) = event else { return }
            _ = secondJudged.wait(timeout: .now() + 5)
            Thread.sleep(forTimeInterval: 0.2)
        }
    }

    /// A transport reports a stream's head twice, and the API judges heads elsewhere (it has a
    /// plugin): each head is judged in a job of its own on the pipeline's concurrent queue. The
    /// second job takes the chunks and the end that waited for the judging, while the first is
    /// still opening the stream: the end goes to the collector before it knows the stream, and
    /// the stream never ends. Its reader waits for ever (2 runs in 5 without the hold; every run
    /// with it).
    @Test func aStreamWhoseHeadCameTwiceEndsWhenJudgedElsewhere() async throws {
        let secondJudged = DispatchSemaphore(value: 0)
        let validation = Validation.custom { response in
            if response.statusCode == 500 { secondJudged.signal() }
            return (200..<300).contains(response.statusCode)
        }
        let configuration = APIConfiguration(timeout: 10, validation: validation, retryPolicy: .never,
                                             plugins: [HoldsTheFirstHead(secondJudged: secondJudged)])
        try await Self.attack(Hostile(.inside, unruly: true, [.head(200), .head(500), .chunk("a\n"), .end()]), configuration) { api, _ in
            let ended = try await Self.within {
                do {
                    var lines: [String] = []
                    for try await line in api.stream(route: .get(Self.url)).lines { lines.append(line) }
                    return "complete: \(lines)"
                } catch {
                    return "failed: \(error)"
                }
            }
            #expect(ended != nil, "the stream never ended")
        }
    }

    /// Answers the first request with a whole redirect, then returns its task only once the
    /// redirected request's transfer has paused (its `send` returned, its task attached).
    final class RedirectsLate: Hostile, @unchecked Sendable {
        /// Set once the first request's `send` has returned.
        let firstReturned = Recorder<Bool>()

        override func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
            guard request.urlRequest.url?.path == "/thing" else { return super.send(request, to: receiver) }
            let hook = Hook()
            hook.set { [pausesHeld] in
                let deadline = Date().addingTimeInterval(10)
                while pausesHeld.items.isEmpty, Date() < deadline { Thread.sleep(forTimeInterval: 0.001) }
                Thread.sleep(forTimeInterval: 0.02)   // the redirected send returns and its task is attached
            }
            defer { firstReturned.append(true) }
            return send(request, to: receiver, steps: [.head(302, ["Location": "/next"]), .chunk("moved"), .end(), .run(hook)])
        }
    }

    /// A stream redirected by an answer given whole before its `send` returned: the pipeline
    /// follows the redirect at once, on its queue, and the first `send`, returning after the
    /// second, hands the stream's buffer its task (`StreamBuffer.attach` takes any attempt's),
    /// in place of the redirected transfer's. Once the reader has made room, the buffer resumes
    /// the first task, which has ended; the paused transfer waits for ever, and so does the
    /// reader (and its cancel stops the wrong task too). Seen 1 run in 1 of `aPausingStream`
    /// without a plugin; every run here.
    @Test func aRedirectsLateTaskDoesNotTakeTheStreamsPlace() async throws {
        let chunks = (0..<8).map { Step.chunk("line \($0)\n") }
        try await Self.attack(RedirectsLate(.otherThread, pauses: true, answers: [[.head(200)] + chunks + [.end()]])) { api, transport in
            let lines = try await Self.within {
                var lines: [String] = []
                let stream = api.stream(route: .get(Self.url), options: RequestOptions(streamBufferSize: 8))
                _ = try await stream.response.value
                // The reader makes room only once the first send has returned and its task is attached.
                _ = await eventually(timeout: 10) { (transport as? RedirectsLate)?.firstReturned.items.isEmpty == false }
                try await Task.sleep(nanoseconds: 50_000_000)
                for try await line in stream.lines { lines.append(line) }
                return lines
            }
            #expect(lines == (0..<8).map { "line \($0)" })
            #expect(transport.stuck.items.isEmpty, "paused and never resumed")
        }
    }
}
