import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tern

/// What a stub answers with: a response (status, headers, body), or a transport error; sent at
/// once or after a delay on the stub transport's clock, whole or in chunks.
///
/// ```swift
/// .json(#"{"id": 1}"#)
/// .status(401)
/// .json(product, status: 201).delayed(by: 2)                       // with `try`: encoding may fail
/// .file(fixture, contentType: "image/png").chunked(into: 16_384)   // with `try`: the file is read now
/// .failure(URLError(.notConnectedToInternet))
/// ```
public struct StubAnswer: Sendable {
    enum Outcome: Sendable {
        case response(status: Int, headers: HTTPHeaders, body: Data)
        /// A head, then each piece of the body once its time has passed on the clock.
        case streamed(status: Int, headers: HTTPHeaders, pieces: [(after: TimeInterval, data: Data)])
        case failure(any Error & Sendable)
    }

    let outcome: Outcome
    /// Seconds on the transport's clock before the answer starts.
    var delay: TimeInterval = 0
    /// The size of the body's chunks, or `nil` for one.
    var chunkSize: Int?
    /// Whether a streamed answer stays open after its last piece, until cancelled: a recorded
    /// stream the client left while it was going.
    var staysOpen = false
    /// What a streamed answer fails with after its last piece, instead of ending: a recorded
    /// exchange cut short.
    var endsWith: URLError?

    /// A response with this status, headers and body.
    public static func status(_ status: Int, headers: HTTPHeaders = [:], body: Data = Data()) -> StubAnswer {
        StubAnswer(outcome: .response(status: status, headers: headers, body: body))
    }

    /// A JSON response with this text as its body, which need not be valid JSON, and `headers`
    /// besides its `Content-Type` (a `Link` or an `ETag`, say).
    public static func json(_ text: String, status: Int = 200, headers: HTTPHeaders = [:]) -> StubAnswer {
        .status(status, headers: typed("application/json", headers), body: Data(text.utf8))
    }

    /// A JSON response with `value` encoded as its body, and `headers` besides its `Content-Type`.
    public static func json(_ value: some Encodable, status: Int = 200, headers: HTTPHeaders = [:],
                            encoder: JSONEncoder = JSONEncoder()) throws -> StubAnswer {
        .status(status, headers: typed("application/json", headers), body: try encoder.encode(value))
    }

    /// A plain-text response, with `headers` besides its `Content-Type`.
    public static func text(_ text: String, status: Int = 200, headers: HTTPHeaders = [:]) -> StubAnswer {
        .status(status, headers: typed("text/plain; charset=utf-8", headers), body: Data(text.utf8))
    }

    /// `headers`, with `contentType` unless they name their own.
    static func typed(_ contentType: String, _ headers: HTTPHeaders) -> HTTPHeaders {
        var typed: HTTPHeaders = ["Content-Type": contentType]
        typed.merge(headers)
        return typed
    }

    /// A response with a fixture file's contents as its body, read now.
    public static func file(_ url: URL, contentType: String = "application/octet-stream", status: Int = 200) throws -> StubAnswer {
        .status(status, headers: ["Content-Type": contentType], body: try Data(contentsOf: url))
    }

    /// A response whose body comes in pieces, each `after` seconds on the transport's clock past
    /// the one before, as a server streaming it would send them: what
    /// `stream(route:)` and `events(route:)` read, on a `TestClock` moved by the test.
    ///
    /// ```swift
    /// .streamed([(after: 0, "first\n"), (after: 1, "second\n")])
    /// ```
    public static func streamed(status: Int = 200, headers: HTTPHeaders = [:], _ pieces: [(after: TimeInterval, text: String)]) -> StubAnswer {
        StubAnswer(outcome: .streamed(status: status, headers: headers, pieces: pieces.map { ($0.after, Data($0.text.utf8)) }))
    }

    /// Server-Sent Events (`text/event-stream`), each `after` seconds on the transport's clock
    /// past the one before, with its type, ID and data written as a server would.
    ///
    /// ```swift
    /// .events([(after: 0.1, ServerSentEvent(data: "A tern")), (after: 0.1, ServerSentEvent(data: " is"))])
    /// ```
    public static func events(_ events: [(after: TimeInterval, event: ServerSentEvent)]) -> StubAnswer {
        .streamed(headers: ["Content-Type": "text/event-stream"], events.map { after, event in
            var text = event.type == "message" ? "" : "event: \(event.type)\n"
            if !event.lastEventID.isEmpty { text += "id: \(event.lastEventID)\n" }
            for line in event.data.split(separator: "\n", omittingEmptySubsequences: false) { text += "data: \(line)\n" }
            return (after, text + "\n")
        })
    }

    /// No response: the transport fails with `error`, as a lost connection would.
    public static func failure(_ error: any Error & Sendable) -> StubAnswer {
        StubAnswer(outcome: .failure(error))
    }

    /// What a ``LoopbackServer`` would send for `response`, so that one handler can serve both:
    /// `.delayed` waits on the transport's clock; `.repeated` answers the whole body, made in
    /// memory; `.hangUp` fails as an empty reply would; a response cut short, stalled or endless
    /// fails as a lost connection, with no partial body.
    package init(_ response: ServerResponse) {
        let whole = Outcome.response(status: response.status, headers: response.headers, body: response.body)
        switch response.behavior {
        case .normal:
            self.init(outcome: whole)
        case .delayed(let seconds):
            self.init(outcome: whole, delay: seconds)
        case .hangUp:
            self.init(outcome: .failure(URLError(.badServerResponse)))
        case .repeated(let times):
            self.init(outcome: .response(status: response.status, headers: response.headers,
                                         body: Data(repeatElement(response.body, count: max(times, 0)).joined())))
        case .truncated, .stalled, .stall, .endless, .endlessHead:
            self.init(outcome: .failure(URLError(.networkConnectionLost)))
        }
    }

    init(outcome: Outcome, delay: TimeInterval = 0, chunkSize: Int? = nil, staysOpen: Bool = false, endsWith: URLError? = nil) {
        self.outcome = outcome
        self.delay = delay
        self.chunkSize = chunkSize
        self.staysOpen = staysOpen
        self.endsWith = endsWith
    }

    /// The same answer, starting after `seconds` on the transport's clock (a `TestClock` moves
    /// only when the test says so).
    public func delayed(by seconds: TimeInterval) -> StubAnswer {
        var copy = self
        copy.delay = seconds
        return copy
    }

    /// The same answer, its body sent in chunks of `size` bytes, so that download progress
    /// and the body limit see them one by one; the request's body is reported sent in steps of
    /// the same size, for upload progress.
    public func chunked(into size: Int) -> StubAnswer {
        var copy = self
        copy.chunkSize = max(1, size)
        return copy
    }
}
