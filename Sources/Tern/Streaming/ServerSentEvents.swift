import Foundation

extension ResponseStream {
    /// The body as Server-Sent Events (`text/event-stream`), read as the WHATWG HTML
    /// specification says. A line longer than `maximumLineLength` bytes ends the stream with
    /// ``APIError/responseTooLarge(_:)``.
    ///
    /// ```swift
    /// for try await event in client.stream(route: .post("/completions"), parameters: JSONParameters(prompt)).events {
    ///     print(event.data, terminator: "")
    /// }
    /// ```
    public func events(maximumLineLength: Int = 1 << 20) -> ServerSentEvents {
        ServerSentEvents(stream: self, maximumLineLength: maximumLineLength)
    }

    /// The body as Server-Sent Events, no line longer than 1 MiB: ``events(maximumLineLength:)``.
    public var events: ServerSentEvents { events() }
}

/// A streamed body as Server-Sent Events: ``ResponseStream/events(maximumLineLength:)``.
public struct ServerSentEvents: AsyncSequence, Sendable {
    /// An event.
    public typealias Element = ServerSentEvent

    let stream: ResponseStream
    let maximumLineLength: Int

    /// Makes the one iterator the stream gives.
    public func makeAsyncIterator() -> Iterator {
        Iterator(chunks: stream.makeAsyncIterator(), parser: ServerSentEventParser(maximumLineLength: maximumLineLength), stream: stream)
    }

    /// Yields the events as their lines arrive.
    public struct Iterator: AsyncIteratorProtocol {
        var chunks: ResponseStream.Iterator
        /// Its last event ID and reconnection time are read by ``EventSource``.
        private(set) var parser: ServerSentEventParser
        let stream: ResponseStream
        var ready: [ServerSentEvent] = []

        /// The next event, or `nil` at the body's end (an event it ended in the middle of is dropped).
        public mutating func next() async throws -> ServerSentEvent? {
            while ready.isEmpty {
                guard let chunk = try await chunks.next() else { return nil }
                do {
                    ready = try parser.events(in: chunk)
                } catch {
                    stream.cancel()
                    throw stream.lineTooLong(error.maximumLength)
                }
            }
            return ready.removeFirst()
        }
    }
}
