import Foundation
import Tern

/// What a ``LoopbackServer`` does with a request: answer it, or misbehave on purpose.
public struct ServerResponse: Sendable {
    /// How the answer goes out.
    public enum Behavior: Sendable, Equatable {
        /// The whole response, at once.
        case normal
        /// The whole response, after waiting this many seconds.
        case delayed(TimeInterval)
        /// No response: the connection stays silent this many seconds, or until the client
        /// closes it, then closes.
        case stall(TimeInterval)
        /// No response: the connection closes at once.
        case hangUp
        /// The status line, the headers with the full `Content-Length`, and only this many
        /// bytes of the body; then the connection closes.
        case truncated(afterBytes: Int)
        /// The status line, the headers with the full `Content-Length`, and only this many bytes
        /// of the body; then silence for this many seconds, or until the client closes the
        /// connection, then the connection closes.
        case stalled(afterBytes: Int, seconds: TimeInterval)
        /// The status line and headers without a length, then the body over and over until the
        /// client closes the connection (or 64 MiB have gone, so that a test gone wrong still
        /// ends, and soon: a flood over loopback starves everything else in the process).
        case endless
        /// The status line, then header fields without end (or until 64 MiB have gone), never
        /// the empty line that ends them; then the connection closes.
        case endlessHead
        /// The body this many times over (none if negative), its whole length announced: a
        /// large response from a small body, sent without ever being held whole.
        case repeated(times: Int)
    }

    /// The status code.
    public var status: Int
    /// The headers; `Content-Length` is added.
    public var headers: HTTPHeaders
    /// The body.
    public var body: Data
    /// How it goes out.
    package var behavior: Behavior
    /// Header fields sent as they are after ``headers``, even when a name repeats (two `Link`
    /// or `Set-Cookie` fields, say), which ``headers`` cannot hold.
    public var repeatedFields: [(name: String, value: String)] = []

    /// Creates a response.
    public init(status: Int = 200, headers: HTTPHeaders = [:], body: Data = Data(), behavior: Behavior = .normal) {
        self.status = status
        self.headers = headers
        self.body = body
        self.behavior = behavior
    }

    /// A JSON response with the given text as its body, which need not be valid JSON, and
    /// `headers` besides its `Content-Type` (a `Cache-Control` or an `ETag`, say), as a stub's.
    public static func json(_ text: String, status: Int = 200, headers: HTTPHeaders = [:]) -> ServerResponse {
        ServerResponse(status: status, headers: StubAnswer.typed("application/json", headers), body: Data(text.utf8))
    }

    /// A JSON response with `value` encoded as its body, and `headers` besides its `Content-Type`.
    public static func json(_ value: some Encodable, status: Int = 200, headers: HTTPHeaders = [:],
                            encoder: JSONEncoder = JSONEncoder()) -> ServerResponse {
        let body = (try? encoder.encode(value)) ?? Data()
        return ServerResponse(status: status, headers: StubAnswer.typed("application/json", headers), body: body)
    }

    /// A plain-text response, with `headers` besides its `Content-Type`.
    public static func text(_ text: String, status: Int = 200, headers: HTTPHeaders = [:]) -> ServerResponse {
        ServerResponse(status: status, headers: StubAnswer.typed("text/plain; charset=utf-8", headers), body: Data(text.utf8))
    }

    /// A file served as a server with range support serves it (RFC 9110, section 14): a 206 with
    /// the rest of `body` when `request` asks for `bytes=<start>-` (or `<start>-<end>`) and its
    /// `If-Range`, if any, matches `etag` or `lastModified`; a 416 when the range starts past the
    /// end; else the whole body with a 200. `ETag`, `Last-Modified` and `Accept-Ranges` come
    /// along.
    public static func file(_ body: Data, for request: RecordedRequest, etag: String? = nil, lastModified: String? = nil) -> ServerResponse {
        var headers: HTTPHeaders = ["Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"]
        if let etag { headers["ETag"] = etag }
        if let lastModified { headers["Last-Modified"] = lastModified }
        let whole = ServerResponse(headers: headers, body: body)
        guard let range = request.headers["Range"], range.hasPrefix("bytes="),
              case let bounds = range.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false),
              bounds.count == 2, let start = Int(bounds[0]) else { return whole }
        // If-Range compares strongly: a weak tag never matches.
        if let condition = request.headers["If-Range"],
           !(condition == etag && !condition.hasPrefix("W/")) && condition != lastModified {
            return whole
        }
        guard start < body.count else {
            headers["Content-Range"] = "bytes */\(body.count)"
            return ServerResponse(status: 416, headers: headers)
        }
        let end = min(Int(bounds[1]) ?? body.count - 1, body.count - 1)
        headers["Content-Range"] = "bytes \(start)-\(end)/\(body.count)"
        return ServerResponse(status: 206, headers: headers, body: body.subdata(in: start..<(end + 1)))
    }

    /// A response with this behavior instead of the normal one.
    public func with(_ behavior: Behavior) -> ServerResponse {
        var copy = self
        copy.behavior = behavior
        return copy
    }
}

/// A request as a ``LoopbackServer`` received it, byte for byte.
public struct RecordedRequest: Sendable {
    /// The method.
    public let method: String
    /// The request target as sent: path and query, still percent-encoded.
    package let target: String
    /// The headers in the order sent.
    public let headers: HTTPHeaders
    /// The body, de-chunked when it came chunked; only its start when the server keeps less
    /// (see ``LoopbackServer/init(keepingBodiesUpTo:handler:)``).
    public let body: Data
    /// The length of the whole body, kept or not.
    public let bodyLength: Int

    /// Creates a recorded request.
    package init(method: String, target: String, headers: HTTPHeaders, body: Data, bodyLength: Int? = nil) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.bodyLength = bodyLength ?? body.count
    }

    /// The path, still percent-encoded.
    public var path: String {
        String(target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0])
    }

    /// The query as sent, still percent-encoded; empty when there is none.
    package var query: String {
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        return parts.count > 1 ? String(parts[1]) : ""
    }

    /// The query's pairs, percent-decoded, in order.
    public var queryItems: [(name: String, value: String)] {
        query.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (text: Substring) in String(text).removingPercentEncoding ?? String(text) }
            return (decode(parts[0]), parts.count > 1 ? decode(parts[1]) : "")
        }
    }
}
