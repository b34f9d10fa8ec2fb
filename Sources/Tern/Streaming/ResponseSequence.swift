/// A streamed response read as values, one after another: the lines, events or decoded values
/// of a ``ResponseStream`` (``ResponseStream/lines``, ``ResponseStream/events``,
/// ``ResponseStream/values(of:maximumLineLength:)``), or an event source's events across its
/// connections (``AbstractAPI/events(route:parameters:options:reconnection:)``), or a
/// collection's pages (``AbstractAPI/pages(_:style:collectionKeyPath:)``).
///
/// ```swift
/// for try await line in client.stream(route: .get("/logs/tail")).lines {
///     print(line)
/// }
/// ```
///
/// A stream's views give one iterator: iterate them once. An event source's opens its own
/// connections for each iterator, and pages start again from the first. Leaving the loop, or
/// cancelling its task, stops the transfer.
public struct ResponseSequence<Element: Sendable>: AsyncSequence, Sendable {
    /// Makes what reads the next value of one iteration.
    private let makeNext: @Sendable () -> () async throws -> Element?

    /// The values of `base`, whose type stays Tern's own.
    init<Base: AsyncSequence & Sendable>(_ base: Base) where Base.Element == Element {
        makeNext = {
            var iterator = base.makeAsyncIterator()
            return { try await iterator.next() }
        }
    }

    /// Makes an iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(nextValue: makeNext())
    }

    /// Yields the values as they come.
    public struct Iterator: AsyncIteratorProtocol {
        let nextValue: () async throws -> Element?

        /// The next value, or `nil` at the end; throws the ``APIError`` that ended the stream.
        public mutating func next() async throws -> Element? {
            try await nextValue()
        }
    }
}
