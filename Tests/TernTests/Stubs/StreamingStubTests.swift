import Foundation
import Testing
@testable import Tern
import TernTesting

/// Stubs that stream, each piece when the test moves its clock: streams tested without a
/// server or a wait.
@Suite(.timeLimit(.minutes(1))) struct StreamingStubTests {
    static let base = "https://stream.invalid"

    /// An API with no timeout of its own: the timers on the test clock are then the stream's
    /// and the stub's alone, which the tests count (a request's timer, pending until its
    /// response came, was once counted for the first piece's, which then came a tick late).
    func api(_ stubs: StubTransport, clock: TestClock) throws -> TestAPI {
        try TestAPI(baseURL: Self.base, configuration: APIConfiguration(timeout: .infinity, retryPolicy: .never), transport: stubs, clock: clock)
    }

    @Test func eventsComeAsTheTestClockMoves() async throws {
        let clock = TestClock()
        let stubs = StubTransport(clock: clock)
        stubs.add(Stub(.post, "/completions", answers: .events([
            (after: 1, ServerSentEvent(data: "A tern")),
            (after: 1, ServerSentEvent(data: " is\na bird", lastEventID: "2")),
            (after: 1, ServerSentEvent(type: "done", data: "[DONE]")),
        ])))
        let api = try api(stubs, clock: clock)
        let seen = Recorder<ServerSentEvent>()
        let reading = Task {
            for try await event in api.stream(route: api.post(endpoint: "/completions")).events { seen.append(event) }
        }
        // The stream's idle timer and the first piece wait on the clock; nothing has come.
        #expect(await clock.waitForScheduled(2))
        #expect(seen.items.isEmpty)
        clock.advance(by: 1)
        #expect(await eventually { seen.items.count == 1 })
        #expect(await clock.waitForScheduled(2))
        clock.advance(by: 1)
        #expect(await eventually { seen.items.count == 2 })
        #expect(await clock.waitForScheduled(2))
        clock.advance(by: 1)
        try await outcome(of: reading).get()
        #expect(seen.items == [
            ServerSentEvent(data: "A tern"),
            ServerSentEvent(data: " is\na bird", lastEventID: "2"),
            ServerSentEvent(type: "done", data: "[DONE]", lastEventID: "2"),
        ])
    }

    @Test func aStreamEndsAtItsMaximumDurationWhateverComes() async throws {
        let clock = TestClock()
        let stubs = StubTransport(clock: clock)
        stubs.add(Stub(.get, "/ticks", answers: .streamed(Array(repeating: (after: 1, text: "tick\n"), count: 10))))
        let api = try api(stubs, clock: clock)
        let lines = Recorder<String>()
        // Open first, here: the request does not wait for another task to start.
        let stream = api.stream(route: api.get(endpoint: "/ticks"), idleTimeout: 2, maximumDuration: 3.5)
        _ = try await stream.response.value
        let reading = Task {
            for try await line in stream.lines { lines.append(line) }
        }
        for count in 1...3 {
            #expect(await clock.waitForScheduled(3))   // the idle and duration timers, the next tick
            clock.advance(by: 1)
            #expect(await eventually { lines.items.count == count })
        }
        clock.advance(by: 0.5)
        guard case .failure(let error) = await outcome(of: reading), case .timeout(let failure)? = error as? APIError else {
            Issue.record("expected a timeout")
            return
        }
        #expect(failure.interval == 3.5)
        #expect(lines.items.count == 3)
    }

    @Test func aStreamThatFallsSilentTimesOutOnTheTestClock() async throws {
        let clock = TestClock()
        let stubs = StubTransport(clock: clock)
        stubs.add(Stub(.get, "/tail", answers: .streamed([(after: 0, "first\n"), (after: 100, "too late\n")])))
        let api = try api(stubs, clock: clock)
        let lines = Recorder<String>()
        let reading = Task {
            for try await line in api.stream(route: api.get(endpoint: "/tail"), idleTimeout: 10).lines { lines.append(line) }
        }
        #expect(await eventually { lines.items == ["first"] })
        clock.advance(by: 10)
        guard case .failure(let error) = await outcome(of: reading), case .timeout? = error as? APIError else {
            Issue.record("expected a timeout")
            return
        }
        #expect(lines.items == ["first"])
    }
}
