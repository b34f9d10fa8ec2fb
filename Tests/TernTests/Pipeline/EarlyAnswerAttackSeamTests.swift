import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Tern

/// Answers given before the task came, where features meet: a redirect or a retry read each
/// way, an answer that comes after the request timed out, many requests at once, an event
/// source refused.
@Suite(.onTestThreads, .timeLimit(.minutes(1)))
struct EarlyAnswerAttackSeamTests: EarlyAnswerAttack {
    @Test(arguments: Reading.allCases, Place.allCases) func aRedirectReadEachWay(reading: Reading, place: Place) async throws {
        let configuration = Self.configuration(reading)
        try await Self.inDirectory { directory in
            try await Self.attack(Hostile(place, answers: [[.head(302, ["Location": "/next"]), .chunk("moved"), .end()],
                                                           [.head(200), .chunk("he"), .chunk("re\n"), .end()]]), configuration) { api, transport in
                let read = try await Self.read(reading, from: api, in: directory)
                #expect(read.flatMap { try? $0.get() } == "here\n", "\(String(describing: read))")
                #expect(transport.requests.items.map { $0.url?.path } == ["/thing", "/next"])
            }
        }
        await Self.expectStreamEndsMatchHeads(configuration)
    }

    /// The first attempt fails after some of its body; a stream's head has opened it by then,
    /// so its failure is the stream's.
    @Test(arguments: Reading.allCases, Place.allCases) func aRetryReadEachWay(reading: Reading, place: Place) async throws {
        let configuration = Self.configuration(reading, retryPolicy: RetryPolicy(maxRetries: 1, baseDelay: 0.01, jitter: false))
        try await Self.inDirectory { directory in
            try await Self.attack(Hostile(place, answers: [[.head(200), .chunk("cut"), .end(.networkConnectionLost)],
                                                           [.head(200), .chunk("whole\n"), .end()]]), configuration) { api, _ in
                let read = try await Self.read(reading, from: api, in: directory)
                switch (reading, read) {
                case (.request, .success("whole\n")?), (.download, .success("whole\n")?): break
                case (.stream, .failure(.transportFailed)?), (.streamWithPlugin, .failure(.transportFailed)?): break
                default: Issue.record("\(reading): \(String(describing: read))")
                }
            }
        }
        await Self.expectStreamEndsMatchHeads(configuration)
    }

    /// `send` holds the answer until the request has timed out, then gives it whole.
    @Test(arguments: Reading.allCases) func anAnswerAfterTheTimeout(reading: Reading) async throws {
        let configuration = Self.configuration(reading, timeout: 1)
        let hook = Hook()
        let released = DispatchSemaphore(value: 0)
        hook.set { _ = released.wait(timeout: .now() + 20) }
        try await Self.inDirectory { directory in
            try await Self.attack(Hostile(.inside, [.run(hook), .head(200), .chunk("late\n"), .end()]), configuration) { api, _ in
                let read = try await Self.read(reading, from: api, in: directory)
                released.signal()
                if case .failure(.timeout)? = read {} else { Issue.record("\(String(describing: read))") }
            }
            let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            #expect(await eventually(timeout: 10) { ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).isEmpty },
                    "left \(left)")
        }
        await Self.expectStreamEndsMatchHeads(configuration)
    }

    /// Requests and streams side by side on one transport, each answered whole in `send` with
    /// its own path: each gets its own answer, once.
    @Test(arguments: Place.allCases, [false, true]) func manyAtOnce(place: Place, withPlugin: Bool) async throws {
        let configuration = APIConfiguration(timeout: 20, retryPolicy: .never, plugins: withPlugin ? [Watching()] : [])
        try await Self.inDirectory { directory in
            try await Self.attack(EchoesPath(place, answers: []), configuration) { api, _ in
                let wrong = Recorder<String>()
                await withTaskGroup(of: Void.self) { group in
                    for index in 0..<120 {
                        group.addTask {
                            let reading = [Reading.request, .download, .stream][index % 3]
                            let url = "https://early.invalid/\(index)"
                            let read = try? await Self.read(reading, from: api, url: url, in: directory)
                            if read.flatMap({ try? $0.get() }) != "/\(index)" { wrong.append("\(index) \(reading): \(String(describing: read))") }
                        }
                    }
                }
                #expect(wrong.items.isEmpty, "\(wrong.items)")
            }
        }
        await Self.expectStreamEndsMatchHeads(configuration)
    }

    /// An event source answered whole inside `send` with no event stream, or a 204.
    @Test(arguments: [200, 204], Place.allCases) func anEventSourceRefused(status: Int, place: Place) async throws {
        let steps: [Step] = [.head(status, ["Content-Type": "application/json"]), .chunk("{\"error\":1}"), .end()]
        try await Self.attack(Hostile(place, steps)) { api, _ in
            let ended = try await Self.within {
                do {
                    for try await _ in api.events(route: .get(Self.url)) {}
                    return "ended"
                } catch APIError.parsingFailed {
                    return "not an event stream"
                }
            }
            #expect(ended == (status == 204 ? "ended" : "not an event stream"))
        }
    }
}

extension EarlyAnswerAttackSeamTests {
    /// A transport that pauses when told to, from another thread: what comes before the first
    /// pause comes before `send` returns, the rest once the task is resumed, a resume perhaps
    /// owed to a task not yet attached (a head judged elsewhere pauses; a small buffer fills).
    @Test(arguments: [false, true], [false, true]) func aPausingStream(withPlugin: Bool, redirected: Bool) async throws {
        let configuration = APIConfiguration(timeout: 30, retryPolicy: .never, plugins: withPlugin ? [Watching()] : [])
        let chunks = (0..<8).map { Step.chunk("line \($0)\n") }
        let answers: [[Step]] = (redirected ? [[.head(302, ["Location": "/next"]), .chunk("moved"), .end()]] : []) + [[.head(200)] + chunks + [.end()]]
        try await Self.attack(Hostile(.otherThread, pauses: true, answers: answers), configuration) { api, transport in
            let lines = try await Self.within {
                var lines: [String] = []
                for try await line in api.stream(route: .get(Self.url), options: RequestOptions(streamBufferSize: 8)).lines { lines.append(line) }
                return lines
            }
            #expect(lines == (0..<8).map { "line \($0)" })
            #expect(transport.stuck.items.isEmpty, "paused and never resumed")
        }
        await Self.expectStreamEndsMatchHeads(configuration)
    }
}
