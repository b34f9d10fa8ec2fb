import Foundation
import Testing
@testable import Tern
import TernTesting
@testable import TernSnippets

/// Stubs that stream, each piece when the test moves its clock: streams tested without a
/// server or a wait.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct StreamingStubTests {
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
        let reading = Task.onTestThreads {
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

    /// The Testing with Stubs article's recipe, with the API's defaults: the request's own
    /// 60 s timeout and the stream's idle timeout wait on the same clock as the pieces. Waiting
    /// for one scheduled action and advancing by 0.2 passed once and hung the next run, when
    /// the timeout was the action seen and the first piece was scheduled after the advance.
    @Test func theArticlesRecipeReadsEachEventAsTheClockMoves() async throws {
        #expect(try await StubSnippets.streamedCompletion() == 0.4)
    }

    /// The article's event source recipe: one event, the answer's end, the wait to reconnect
    /// moved past, the second answer's event, with the first one's ID sent back. Run many times,
    /// since its waits race if any other timer is on the clock.
    @Test func theEventSourceRecipeReadsAcrossAReconnection() async throws {
        for _ in 0..<20 {
            #expect(abs(try await StubSnippets.reconnectingFeed() - 3.2) < 1e-9)
        }
    }

    /// The article's Retry-After recipe: one wait of 20 s, then the answer.
    @Test func theRetryAfterRecipeWaitsTheTimeTheServerAsked() async throws {
        let (products, waits) = try await StubSnippets.retryAfter()
        #expect(products == 0)
        #expect(waits == [20])
    }

    /// The clock moves to the stub's next send and no further: a delayed answer comes at its
    /// time, long before the request's timeout; a piece due after the stream's idle timeout
    /// comes too late, as it would in real time.
    @Test func advancingToTheNextDeliveryRunsOnlyWhatIsDueBeforeIt() async throws {
        let clock = TestClock()
        let stubs = StubTransport(clock: clock)
        stubs.add(Stub(.get, "/late", answers: StubAnswer.streamed([(after: 0, "first\n")]).delayed(by: 5)))
        stubs.add(Stub(.get, "/silent", answers: .streamed([(after: 30, "too late\n")])))
        let api = try TestAPI(baseURL: Self.base, configuration: APIConfiguration(timeout: 60, retryPolicy: .never), transport: stubs, clock: clock)
        var late = api.stream(route: api.get(endpoint: "/late")).lines.makeAsyncIterator()
        #expect(await clock.advanceToNextDelivery())
        #expect(clock.now == 5)
        #expect(try await late.next() == "first")
        #expect(try await late.next() == nil)
        var silent = api.stream(route: api.get(endpoint: "/silent"), options: RequestOptions(streamIdleTimeout: 10)).lines.makeAsyncIterator()
        #expect(await clock.advanceToNextDelivery())
        #expect(clock.now == 35)
        await #expect(throws: APIError.self) { _ = try await silent.next() }
        // Nothing more to send: the clock stays.
        #expect(await clock.advanceToNextDelivery(timeout: 0.1) == false)
        #expect(clock.now == 35)
    }

    @Test func aStreamEndsAtItsMaximumDurationWhateverComes() async throws {
        let clock = TestClock()
        let stubs = StubTransport(clock: clock)
        stubs.add(Stub(.get, "/ticks", answers: .streamed(Array(repeating: (after: 1, text: "tick\n"), count: 10))))
        let api = try api(stubs, clock: clock)
        let lines = Recorder<String>()
        // Open first, here: the request does not wait for another task to start.
        let stream = api.stream(route: api.get(endpoint: "/ticks"), options: RequestOptions(streamIdleTimeout: 2, streamMaximumDuration: 3.5))
        _ = try await stream.response.value
        let reading = Task.onTestThreads {
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

    /// TernTesting's article: an event source's wait before it reconnects is a timer, not a
    /// piece. Once the stub's pieces are sent, `advanceToNextDelivery` finds none and returns
    /// `false`; the wait is the last of `scheduledDelays`, and advancing past it reconnects.
    @Test func anEventSourcesWaitToReconnectIsATimerTheTestAdvancesPast() async throws {
        let clock = TestClock()
        let stubs = StubTransport(clock: clock)
        stubs.add(Stub(.get, "/changes", answers: .events([(after: 1, ServerSentEvent(data: "one", lastEventID: "7"))])))
        let api = try api(stubs, clock: clock)
        let seen = Recorder<ServerSentEvent>()
        let reading = Task.onTestThreads {
            for try await event in api.events(route: api.get(endpoint: "/changes"), reconnection: EventReconnection(delay: 2, maximumDelay: 2)) {
                seen.append(event)
                if seen.items.count == 2 { break }
            }
        }
        #expect(await clock.advanceToNextDelivery())
        #expect(await eventually { seen.items.count == 1 })
        #expect(await clock.advanceToNextDelivery(timeout: 0.5) == false)
        #expect(await eventually { clock.scheduledDelays.last == 2 }, "\(clock.scheduledDelays)")
        #expect(stubs.requests.count == 1)
        clock.advance(by: 2)
        #expect(await eventually { stubs.requests.count == 2 })
        #expect(stubs.requests.last?.headers["Last-Event-ID"] == "7")
        #expect(await clock.advanceToNextDelivery())
        try await outcome(of: reading).get()
        #expect(seen.items.map(\.data) == ["one", "one"])
    }

    /// A request no stub answers fails the event source at once: asking again would get the
    /// same refusal, and a test would wait out reconnections that cannot succeed.
    @Test func anEventSourceNoStubAnswersFailsAtOnce() async throws {
        let clock = TestClock()
        let stubs = StubTransport(clock: clock)
        let api = try api(stubs, clock: clock)
        let ended = Locked(false)
        let reading = Task.onTestThreads {
            defer { ended.withLock { $0 = true } }
            for try await _ in api.events(route: api.get(endpoint: "/changes")) {}
        }
        // A wait to reconnect would never end on this clock: seen, the test stops it.
        #expect(await eventually { ended.withLock { $0 } || !clock.scheduledDelays.isEmpty })
        guard clock.scheduledDelays.isEmpty else {
            Issue.record("waits \(clock.scheduledDelays) to reconnect")
            reading.cancel()
            return
        }
        guard case .failure(APIError.transportFailed(let failure)) = await outcome(of: reading) else {
            Issue.record("expected transportFailed")
            return
        }
        #expect(failure.underlying is UnmatchedRequest)
        #expect(stubs.requests.count == 1 && clock.scheduledDelays.isEmpty)
    }

    @Test func aStreamThatFallsSilentTimesOutOnTheTestClock() async throws {
        let clock = TestClock()
        let stubs = StubTransport(clock: clock)
        stubs.add(Stub(.get, "/tail", answers: .streamed([(after: 0, "first\n"), (after: 100, "too late\n")])))
        let api = try api(stubs, clock: clock)
        let lines = Recorder<String>()
        let reading = Task.onTestThreads {
            for try await line in api.stream(route: api.get(endpoint: "/tail"), options: RequestOptions(streamIdleTimeout: 10)).lines { lines.append(line) }
        }
        #expect(await eventually { lines.items == ["first"] })
        clock.advance(by: 10)
        guard case .failure(let error) = await outcome(of: reading), case .timeout? = error as? APIError else {
            Issue.record("expected a timeout")
            return
        }
        #expect(lines.items == ["first"])
    }

    /// A whole body of 6 MiB answered to a stream, past the 4 MiB its buffer holds, read by a
    /// reader that starts late and dawdles over its first event: the stub hands it over in
    /// pieces and holds them back while the reader has paused, as a network would, so every
    /// event arrives (the stub once handed the body over at once, and took a pause as go on:
    /// the stream failed with `responseTooLarge`).
    @Test func aWholeBodyLongerThanAStreamsBufferWaitsForASlowReader() async throws {
        let event = "data: " + String(repeating: "e", count: 1000) + "\n\n"
        let count = 6 * 1024
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/events", answers: .status(200, headers: ["Content-Type": "text/event-stream"],
                                                         body: Data(String(repeating: event, count: count).utf8))))
        let api = try TestAPI(baseURL: Self.base, configuration: APIConfiguration(retryPolicy: .never), transport: stubs)
        let stream = api.stream(route: api.get(endpoint: "/events"))
        try await Task.sleep(for: .milliseconds(300))
        var read = 0
        for try await _ in stream.events {
            read += 1
            if read == 1 { try await Task.sleep(for: .milliseconds(300)) }
        }
        #expect(read == count)
    }

    /// A chunk of a million lines, or of 200,000 events, is read in one pass: each was taken
    /// from the front of the chunk's list by moving all the rest, so that a server sending
    /// short lines in large chunks made the reader's time grow with the square of their number
    /// (a quarter of a million lines in one chunk took 11 s; a million, minutes).
    @Test(.timeLimit(.minutes(1)), .enabled(if: !isThreadSanitized, "a million lines, sanitized, come too near the time limit"))
    func aChunkOfAMillionLinesIsReadInOnePass() async throws {
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/lines", answers: .streamed([(after: 0, text: String(repeating: "\n", count: 1_000_000))])))
        stubs.add(Stub(.get, "/events", answers: .streamed(headers: ["Content-Type": "text/event-stream"],
                                                           [(after: 0, text: String(repeating: "data: x\n\n", count: 200_000))])))
        let api = try TestAPI(baseURL: Self.base, configuration: APIConfiguration(retryPolicy: .never), transport: stubs)
        var lines = 0
        for try await line in api.stream(route: api.get(endpoint: "/lines")).lines where line.isEmpty { lines += 1 }
        #expect(lines == 1_000_000)
        var events = 0
        for try await event in api.stream(route: api.get(endpoint: "/events")).events where event.data == "x" { events += 1 }
        #expect(events == 200_000)
    }
}
