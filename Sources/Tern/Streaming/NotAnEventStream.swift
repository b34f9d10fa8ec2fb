import Foundation

/// Why an answer could not be read as events: its `Content-Type` is not `text/event-stream`.
public struct NotAnEventStream: Error, Sendable, CustomStringConvertible {
    /// The answer's `Content-Type`, if it had one.
    package let contentType: String?

    /// What went wrong, in words.
    public var description: String {
        "the answer is \(contentType.map { "\"\($0.prefix(100))\"" } ?? "of no Content-Type"), not text/event-stream"
    }
}

extension ResponseStream {
    /// Waits for the head and returns it, when the answer is an event stream (`text/event-stream`,
    /// whatever its parameters) or a `204`, whose empty body has no events. Otherwise stops the
    /// stream and throws ``APIError/parsingFailed(_:)``, carrying a ``NotAnEventStream`` and the
    /// body's first bytes, those that come within a second (the server's error, as JSON or a
    /// page, says why): read as events, such an answer would end with none, as if the server had
    /// had nothing to say.
    func eventStreamHead() async throws -> Response {
        let response = try await response.value
        let type = response.head.headers["Content-Type"].map(MediaTypeField.lastType(in:))
        guard response.statusCode != 204, type != "text/event-stream" else {
            return response
        }
        let failure: @Sendable (Data) -> APIError = { body in
            APIError.parsingFailed(.init(
                type: String(describing: ServerSentEvent.self), method: response.request.httpMethod, url: response.request.url,
                statusCode: response.statusCode, codingPath: "", underlying: NotAnEventStream(contentType: response.head.headers["Content-Type"]),
                body: body
            ))
        }
        // The snippet is what comes within a second: a server trickling its page a byte at a
        // time would hold the failure back, and the connection, for as long as it liked.
        let stream = self
        let giveUp = Task {
            guard (try? await Task.sleep(nanoseconds: 1_000_000_000)) != nil else { return }
            _ = stream.end(throwing: failure(Data()))
        }
        var body = Data()
        while body.count < APIError.snippetLength, let chunk = try? await buffer.next() { body += chunk }
        giveUp.cancel()
        throw end(throwing: failure(body))
    }
}
