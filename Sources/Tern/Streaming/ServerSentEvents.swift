import Foundation

extension ResponseStream {
    /// The body as Server-Sent Events (`text/event-stream`), read as the WHATWG HTML
    /// specification says. A line longer than `maximumLineLength` bytes, or an event whose data
    /// passes `maximumEventLength` bytes, ends the stream with ``APIError/responseTooLarge(_:)``.
    /// An answer of another `Content-Type` (a server that ignored the request to stream, and
    /// answered JSON) fails with ``APIError/parsingFailed(_:)``, carrying a ``NotAnEventStream``
    /// and the body's first bytes; a `204` has no events.
    ///
    /// ```swift
    /// for try await event in client.stream(route: .post("/completions"), parameters: JSONParameters(prompt)).events {
    ///     print(event.data, terminator: "")
    /// }
    /// ```
    public func events(maximumLineLength: Int = 1 << 20, maximumEventLength: Int = 16 << 20) -> ResponseSequence<ServerSentEvent> {
        ResponseSequence(ServerSentEvents(stream: self, maximumLineLength: maximumLineLength, maximumEventLength: maximumEventLength,
                                          remedy: "Raise it with events(maximumLineLength:maximumEventLength:)"))
    }

    /// The body as events with the default limits, whose error for an event or a line too
    /// long says `remedy`, their last event ID `lastEventID` until the body sets one.
    func events(limitsNamed remedy: String, lastEventID: String) -> ServerSentEvents {
        ServerSentEvents(stream: self, maximumLineLength: 1 << 20, maximumEventLength: 16 << 20, remedy: remedy, lastEventID: lastEventID)
    }

    /// The body as Server-Sent Events, no line longer than 1 MiB and no event's data longer than
    /// 16 MiB: ``events(maximumLineLength:maximumEventLength:)``.
    public var events: ResponseSequence<ServerSentEvent> { events() }
}

/// A streamed body as Server-Sent Events: what ``ResponseStream/events(maximumLineLength:maximumEventLength:)`` reads.
struct ServerSentEvents: AsyncSequence, Sendable {
    /// An event.
    typealias Element = ServerSentEvent

    let stream: ResponseStream
    let maximumLineLength: Int
    let maximumEventLength: Int
    /// What an error for a line or an event too long says raises the limit.
    let remedy: String
    /// The last event ID before the body sets one.
    var lastEventID = ""

    /// Makes the one iterator the stream gives.
    func makeAsyncIterator() -> Iterator {
        Iterator(chunks: stream.makeAsyncIterator(), parser: ServerSentEventParser(maximumLineLength: maximumLineLength, maximumEventLength: maximumEventLength,
                                                                                  lastEventID: lastEventID),
                 stream: stream, remedy: remedy)
    }

    /// Yields the events as their lines arrive.
    struct Iterator: AsyncIteratorProtocol {
        var chunks: ResponseStream.Iterator
        /// Its last event ID and reconnection time are read by `EventSource`.
        private(set) var parser: ServerSentEventParser
        let stream: ResponseStream
        let remedy: String
        /// The events the last chunk completed, taken from the front in constant time: taken
        /// with `removeFirst()`, a chunk of a million events took time by the square of that.
        var ready: ArraySlice<ServerSentEvent> = []
        /// Whether the head was found to be an event stream's.
        var isEventStream = false

        /// The next event, or `nil` at the body's end (an event it ended in the middle of is
        /// dropped). An answer that is no event stream fails with ``APIError/parsingFailed(_:)``.
        mutating func next() async throws -> ServerSentEvent? {
            if !isEventStream {
                _ = try await stream.eventStreamHead()
                isEventStream = true
            }
            while ready.isEmpty {
                guard let chunk = try await chunks.next() else { return nil }
                do {
                    ready = try parser.events(in: chunk)[...]
                } catch {
                    throw stream.end(throwing: stream.tooLong(error.limit, part: error.isLine ? "a line" : "an event's data", remedy: remedy))
                }
            }
            return ready.popFirst()
        }
    }
}
