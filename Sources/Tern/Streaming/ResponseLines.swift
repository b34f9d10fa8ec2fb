import Foundation

extension ResponseStream {
    /// The body as lines of UTF-8 text, without their ends (LF or CRLF); a last line without an
    /// end comes too. A line longer than `maximumLength` bytes ends the stream with
    /// ``APIError/responseTooLarge(_:)``.
    public func lines(maximumLength: Int = 1 << 20) -> ResponseSequence<String> {
        ResponseSequence(ResponseLines(stream: self, maximumLength: maximumLength, remedy: "Raise it with lines(maximumLength:)"))
    }

    /// The body as lines of UTF-8 text, none longer than 1 MiB: ``lines(maximumLength:)``.
    public var lines: ResponseSequence<String> { lines() }
}

/// A streamed body as lines of text: what ``ResponseStream/lines(maximumLength:)`` reads.
struct ResponseLines: AsyncSequence, Sendable {
    /// A line, without its end.
    typealias Element = String

    let stream: ResponseStream
    let maximumLength: Int
    /// What a line too long says raises the cap: the parameter the caller gave it with.
    let remedy: String

    /// Makes the one iterator the stream gives.
    func makeAsyncIterator() -> Iterator {
        Iterator(chunks: stream.makeAsyncIterator(), splitter: LineSplitter(ends: .lineFeed, maximumLength: maximumLength), stream: stream,
                 remedy: remedy)
    }

    /// Yields the lines as their chunks arrive.
    struct Iterator: AsyncIteratorProtocol {
        var chunks: ResponseStream.Iterator
        var splitter: LineSplitter
        let stream: ResponseStream
        let remedy: String
        /// The lines the last chunk completed, taken from the front in constant time: taken
        /// with `removeFirst()`, a chunk of a million lines took time by the square of that.
        var ready: ArraySlice<[UInt8]> = []
        var isDone = false

        /// The next line, or `nil` at the body's end.
        mutating func next() async throws -> String? {
            while ready.isEmpty, !isDone {
                guard let chunk = try await chunks.next() else {
                    isDone = true
                    if let last = splitter.finish() { ready.append(last) }
                    break
                }
                do {
                    ready = try splitter.lines(in: chunk)[...]
                } catch {
                    throw stream.end(throwing: stream.tooLong(error.maximumLength, part: "a line", remedy: remedy))
                }
            }
            return ready.popFirst().map { String(decoding: $0, as: UTF8.self) }
        }
    }
}

extension ResponseStream {
    /// The error of a line (or an event's data) longer than `limit` bytes, which names what
    /// raises that limit: the response's size limit does not apply to a stream.
    func tooLong(_ limit: Int, part: String, remedy: String) -> APIError {
        .responseTooLarge(.init(limit: limit, receivedBytes: limit + 1, declaredLength: nil, method: buffer.method, url: buffer.url, statusCode: nil,
                                streamLimit: .init(part: part, remedy: remedy)))
    }
}
