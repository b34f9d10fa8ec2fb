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
}
