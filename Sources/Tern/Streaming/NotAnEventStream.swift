/// Why an answer could not be read as events: its `Content-Type` is not `text/event-stream`.
public struct NotAnEventStream: Error, Sendable, CustomStringConvertible {
    /// The answer's `Content-Type`, if it had one.
    package let contentType: String?

    /// What went wrong, in words.
    public var description: String {
        "the answer is \(contentType.map { "\"\($0.prefix(100))\"" } ?? "of no Content-Type"), not text/event-stream"
    }
}
