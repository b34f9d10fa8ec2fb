import Foundation

extension ResponseStream {
    /// The body as newline-delimited JSON (NDJSON, JSON Lines): a value of `type` from each line
    /// that is not blank, decoded by the request's parser as it arrives. A line that does not
    /// decode ends the stream with ``APIError/parsingFailed(_:)``, whose coding path starts with
    /// its line number; the values before it have been delivered.
    public func values<Value: Decodable & Sendable>(of type: Value.Type, maximumLineLength: Int = 1 << 20) -> ResponseSequence<Value> {
        ResponseSequence(DecodedLines(lines: ResponseLines(stream: self, maximumLength: maximumLineLength,
                                                           remedy: "Raise it with values(of:maximumLineLength:)"),
                                      parser: parser))
    }
}

/// A streamed body as one decoded value per line: what ``ResponseStream/values(of:maximumLineLength:)`` reads.
struct DecodedLines<Value: Decodable & Sendable>: AsyncSequence, Sendable {
    /// A decoded line.
    typealias Element = Value

    let lines: ResponseLines
    let parser: any ResponseParser

    /// Makes the one iterator the stream gives.
    func makeAsyncIterator() -> Iterator {
        Iterator(lines: lines.makeAsyncIterator(), stream: lines.stream, parser: parser)
    }

    /// Yields the values as their lines arrive.
    struct Iterator: AsyncIteratorProtocol {
        var lines: ResponseLines.Iterator
        let stream: ResponseStream
        let parser: any ResponseParser
        var number = 0

        /// The next value, or `nil` at the body's end.
        mutating func next() async throws -> Value? {
            while let line = try await lines.next() {
                number += 1
                guard line.contains(where: { !$0.isWhitespace }) else { continue }
                let head = try await stream.response.value
                let response = Response(request: head.request, head: head.head, body: Data(line.utf8), timing: head.timing)
                do {
                    return try parser.parse(Value.self, from: response)
                } catch {
                    let path = (error as? DecodingError)?.codingPathDescription ?? ""
                    throw stream.end(throwing: .parsingFailed(.init(
                        type: String(describing: Value.self), method: response.method, url: response.url, statusCode: response.statusCode,
                        codingPath: "line \(number)" + (path.isEmpty ? "" : ", \(path)"), underlying: error, body: response.body
                    )))
                }
            }
            return nil
        }
    }
}
