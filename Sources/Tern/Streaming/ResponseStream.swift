import Foundation

/// A response's body as it arrives, in chunks: what ``AbstractAPI/stream(route:parameters:options:)``
/// returns. Iterate it once.
///
/// Iterating first waits for the response's head (and fails with the request's error, if it
/// fails), then yields each chunk as the transport hands it over, and ends when the body does,
/// or throws the ``APIError`` that ended it. Leaving the loop stops the transfer.
public struct ResponseStream: AsyncSequence, Sendable {
    /// The response's status and headers, once its head has come; its body is empty.
    public let response: Promise<Response>
    let buffer: StreamBuffer
    let parser: any ResponseParser

    /// Makes the one iterator the stream gives.
    public func makeAsyncIterator() -> Iterator {
        Iterator(response: response, buffer: buffer)
    }

    /// Stops the transfer; an iteration under way ends with ``APIError/cancelled``.
    public func cancel() {
        response.cancel()
        buffer.cancel()
    }

    /// Yields the chunks; stops the transfer when it is released before the end.
    public final class Iterator: AsyncIteratorProtocol {
        private let response: Promise<Response>
        private let buffer: StreamBuffer
        private var hasHead = false

        init(response: Promise<Response>, buffer: StreamBuffer) {
            self.response = response
            self.buffer = buffer
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
