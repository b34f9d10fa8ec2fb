import Foundation
import Tern
import TernTesting
import Testing

// The Testing with Stubs article's streamed completion, compiled (SnippetTests finds it here)
// and run by StreamingStubTests.
enum StubSnippets {
    /// Reads the stub's two events as the test clock moves to each; returns the clock's time
    /// at the end.
    static func streamedCompletion() async throws -> TimeInterval {
        let streamClock = TestClock()
        let streaming = StubTransport(clock: streamClock)
        streaming.add(Stub(.post, "/v1/completions", answers: .events([
            (after: 0.2, ServerSentEvent(data: "A tern")),
            (after: 0.2, ServerSentEvent(data: " is a bird")),
        ])))
        let streamingClient = APIClient(configuration: APIConfiguration(baseURL: "https://ai.example"), transport: streaming, clock: streamClock)
        var tokens = streamingClient.stream(route: .post("/v1/completions")).events.makeAsyncIterator()
        await streamClock.advanceToNextDelivery()            // 0.2 s later: the first event has come
        #expect(try await tokens.next()?.data == "A tern")
        await streamClock.advanceToNextDelivery()
        #expect(try await tokens.next()?.data == " is a bird")
        #expect(try await tokens.next() == nil)              // the answer's end
        return streamClock.now
    }

    /// An event source over stubs on the test clock, across one reconnection: returns what it
    /// read and the clock's time at the end.
    static func reconnectingFeed() async throws -> TimeInterval {
        let feedClock = TestClock()
        let feedStubs = StubTransport(clock: feedClock)
        feedStubs.add(Stub(.get, "/changes", answers: .events([(after: 0.1, ServerSentEvent(data: "1", lastEventID: "1"))]),
                           .events([(after: 0.1, ServerSentEvent(data: "2", lastEventID: "2"))])))
        let feedClient = APIClient(configuration: APIConfiguration(baseURL: "https://shop.example"), transport: feedStubs, clock: feedClock)
        let untimed = RequestOptions(timeout: .infinity, streamIdleTimeout: .infinity)
        let reader = Task { () async throws -> [String] in
            var seen: [String] = []
            for try await change in feedClient.events(route: .get("/changes"), options: untimed) {
                seen.append(change.data)
                if seen.count == 2 { break }
            }
            return seen
        }
        defer { reader.cancel() }
        await feedClock.advanceToNextDelivery()              // the first connection's event
        await feedClock.waitForScheduled(1)                  // its answer has ended: the wait to reconnect
        feedClock.advance(by: 3)
        await feedClock.advanceToNextDelivery()              // the second connection's event
        #expect(try await reader.value == ["1", "2"])
        #expect(feedStubs.requests.last?.headers["Last-Event-ID"] == "1")
        return feedClock.now
    }

    /// A 503 with `Retry-After: 20`, then the answer: the retry waits 20 made-up seconds (within `maxDelay`, 30 s by default).
    /// Returns the products and the waits asked for.
    static func retryAfter() async throws -> (products: Int, waits: [TimeInterval]) {
        let retryClock = TestClock()
        let busy = StubTransport()
        busy.add(Stub(.get, "/api/v2/products", answers: .status(503, headers: ["Retry-After": "20"]), .json("[]")))
        let patient = APIClient(configuration: APIConfiguration(baseURL: "https://shop.example/api/v2", timeout: .infinity),
                                transport: busy, clock: retryClock)
        let retried = Task { () async throws -> [Product] in try await patient.request(route: .get("/products")).value }
        await retryClock.waitForScheduled(1)                 // the wait Retry-After asked for: no timeout runs
        retryClock.advance(by: 20)
        let products = try await retried.value                // [], from the second answer
        return (products.count, retryClock.scheduledDelays)   // [20.0]
    }
}
