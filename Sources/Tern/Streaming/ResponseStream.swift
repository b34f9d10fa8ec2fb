import Foundation

/// A response's body as it arrives, in chunks: what ``AbstractAPI/stream(route:parameters:options:)``
/// returns. Iterate it once.
///
/// Iterating first waits for the response's head (and fails with the request's error, if it
/// fails), then yields each chunk as the transport hands it over, and ends when the body does,
/// or throws the ``APIError`` that ended it. Leaving the loop stops the transfer, and so does
/// letting go of a stream never read: once no copy of it, no view of it and no iterator is
/// left, nobody can read its body, and the transfer stops when its head has come (``response``
/// still settles with it).
public struct ResponseStream: AsyncSequence, Sendable {
    /// The response's status and headers, once its head has come; its body is empty.
    public let response: Promise<Response>
    let buffer: StreamBuffer
    let parser: any ResponseParser
    /// Held by every copy of the stream and by its iterator, so that the last to go stops the
    /// transfer nobody can read.
    private let reader: Reader

    init(response: Promise<Response>, buffer: StreamBuffer, parser: any ResponseParser) {
        self.response = response
        self.buffer = buffer
        self.parser = parser
        reader = Reader(response: response, buffer: buffer)
    }

    /// Makes the one iterator the stream gives.
    public func makeAsyncIterator() -> Iterator {
        Iterator(response: response, buffer: buffer, reader: reader)
    }

    /// Stops the transfer; an iteration under way ends with ``APIError/cancelled``.
    public func cancel() {
        response.cancel()
        buffer.cancel()
    }

    /// Stops the transfer for a view that reads the body (lines, events, values) and found it
    /// wrong: `error` is what the view throws, and what plugins hear ended the stream.
    func end(throwing error: APIError) -> APIError {
        response.cancel()
        buffer.cancel(endingWith: error)
        return error
    }

    /// Whoever may still read the body: when the last copy of a stream or iterator lets go of
    /// it, the transfer stops once the head has come, the head's promise left to settle.
    final class Reader: Sendable {
        private let response: Promise<Response>
        private let buffer: StreamBuffer

        init(response: Promise<Response>, buffer: StreamBuffer) {
            self.response = response
            self.buffer = buffer
        }

        deinit {
            // Not here: the last copy may go inside a lock the head's promise or the buffer takes.
            let (response, buffer) = (response, buffer)
            DispatchQueue.global().async {
                response.onResult(in: .global()) { _ in buffer.cancel() }
            }
        }
    }

    /// Yields the chunks; stops the transfer when it is released before the end.
    public final class Iterator: AsyncIteratorProtocol {
        private let response: Promise<Response>
        private let buffer: StreamBuffer
        private let reader: Reader
        private var hasHead = false

        init(response: Promise<Response>, buffer: StreamBuffer, reader: Reader) {
            self.response = response
            self.buffer = buffer
            self.reader = reader
        }

        deinit {
            response.cancel()
            buffer.cancel()
        }

        /// The next chunk, or `nil` at the body's end.
        public func next() async throws -> Data? {
            if !hasHead {
                _ = try await response.value
                hasHead = true
            }
            return try await buffer.next()
        }
    }
}
