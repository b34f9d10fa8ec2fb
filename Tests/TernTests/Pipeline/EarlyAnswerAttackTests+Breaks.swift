import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tern

/// What the attacks break: each test fails on the code as it is.
extension EarlyAnswerAttackTests {
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
}
