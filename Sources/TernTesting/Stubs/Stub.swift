import Foundation
import Tern

/// Which requests a ``StubTransport`` answers, and how: a method, a path pattern, and optionally
/// query items, headers and a predicate that must all match; then its answers in turn, the last
/// one again for every request after.
///
/// Path patterns match segment by segment: `*` is any one segment, and a trailing `**` any rest.
/// A stub can also work its answer out from each request.
///
/// ```swift
/// Stub(.get, "/products/*", query: ["page": "2"], answers: .json("[]"))
/// Stub(.post, "/login", answers: .status(401), .json(#"{"token": "t"}"#))
/// Stub(.post, "/echo") { request in .status(200, body: request.body) }
/// ```
public struct Stub: Sendable {
    /// The method, or `nil` for any.
    package let method: HTTPMethod?
    /// The path pattern.
    package let path: String
    /// Query items the request must have, with these values.
    package let query: [String: String]
    /// Headers the request must have, with these values (names in any case).
    package let headers: [String: String]
    /// A last test on the request, if any.
    package let predicate: (@Sendable (RecordedRequest) -> Bool)?
    /// The answer to a request, given how many requests the stub has answered before it.
    private let answer: @Sendable (RecordedRequest, Int) -> StubAnswer
    /// The path pattern's segments, split once, then decoded as a request's are: a pattern
    /// written as the path is sent (`/notes/a%20b`) or as it reads (`/notes/a b`) matches.
    private let patternSegments: [Segment]

    /// One segment of a path pattern.
    private enum Segment: Equatable {
        /// `*`: any one segment.
        case any
        /// `**` at the end: any rest, even none.
        case rest
        /// This segment, decoded (`%2A` is a star, not `*`).
        case exactly(Substring)
    }

    /// Creates a stub that answers with `answers` in turn, the last one again for every request
    /// after.
    public init(
        _ method: HTTPMethod? = nil,
        _ path: String,
        query: [String: String] = [:],
        headers: [String: String] = [:],
        where predicate: (@Sendable (RecordedRequest) -> Bool)? = nil,
        answers first: StubAnswer,
        _ rest: StubAnswer...
    ) {
        let answers = [first] + rest
        self.init(method, path, query, headers, predicate) { _, served in answers[min(served, answers.count - 1)] }
    }

    /// Creates a stub that works out its answer from each request it matches.
    public init(
        _ method: HTTPMethod? = nil,
        _ path: String,
        query: [String: String] = [:],
        headers: [String: String] = [:],
        where predicate: (@Sendable (RecordedRequest) -> Bool)? = nil,
        respond: @escaping @Sendable (RecordedRequest) -> StubAnswer
    ) {
        self.init(method, path, query, headers, predicate) { request, _ in respond(request) }
    }

    private init(
        _ method: HTTPMethod?, _ path: String, _ query: [String: String], _ headers: [String: String],
        _ predicate: (@Sendable (RecordedRequest) -> Bool)?, answer: @escaping @Sendable (RecordedRequest, Int) -> StubAnswer
    ) {
        self.method = method
        self.path = path
        let raw = path.split(separator: "/", omittingEmptySubsequences: true)
        patternSegments = raw.indices.map { index in
            switch raw[index] {
            case "*": .any
            case "**" where index == raw.count - 1: .rest
            default: .exactly(Self.decoded(raw[index]))
            }
        }
        self.query = query
        self.headers = headers
        self.predicate = predicate
        self.answer = answer
    }

    /// The answer to `request`, the stub's `served`-th (from 0).
    func answer(to request: RecordedRequest, served: Int) -> StubAnswer {
        answer(request, served)
    }

    /// The stub, as an unmatched request lists it.
    package var description: String {
        var text = "\(method?.rawValue ?? "any method") \(path)"
        if !query.isEmpty { text += " query \(query.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&"))" }
        if !headers.isEmpty { text += " headers \(headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", "))" }
        if predicate != nil { text += " and a predicate" }
        return text
    }

    /// The segments of `request`'s path, each percent-decoded: what ``mismatch(with:segments:)``
    /// matches the pattern against, split once for all the stubs. Split before they are
    /// decoded: an encoded slash (`/files/a%2Fb`, the file `a/b`) is part of one segment, as a
    /// server routes it, not two.
    static func segments(of request: RecordedRequest) -> [Substring] {
        request.path.split(separator: "/", omittingEmptySubsequences: true).map(decoded)
    }

    private static func decoded(_ segment: Substring) -> Substring {
        segment.removingPercentEncoding.map { Substring($0) } ?? segment
    }

    /// Why `request`, whose path has `segments`, does not match, or `nil` when it does.
    func mismatch(with request: RecordedRequest, segments: [Substring]) -> String? {
        if let method, method.rawValue != request.method {
            return "method is \(request.method), not \(method.rawValue)"
        }
        if !matches(segments) {
            let decoded = segments.map(String.init)
            let spelled = decoded == request.path.split(separator: "/").map(String.init) ? "" : " (decoded \(decoded))"
            return "path \(request.path)\(spelled) does not match \(path)"
        }
        let items = request.queryItems
        for (name, value) in query.sorted(by: { $0.key < $1.key }) where !items.contains(where: { $0 == (name, value) }) {
            let sent = items.filter { $0.name == name }.map(\.value)
            return sent.isEmpty ? "query has no \(name)" : "query \(name) is \(sent.joined(separator: ", ")), not \(value)"
        }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) where request.headers[name] != value {
            return request.headers[name].map { "header \(name) is \($0), not \(value)" } ?? "header \(name) is missing"
        }
        if let predicate, !predicate(request) {
            return "the predicate is false"
        }
        return nil
    }

    private func matches(_ segments: [Substring]) -> Bool {
        for (index, expected) in patternSegments.enumerated() {
            switch expected {
            case .rest: return true
            case .any: guard index < segments.count else { return false }
            case .exactly(let segment): guard index < segments.count, segment == segments[index] else { return false }
            }
        }
        return patternSegments.count == segments.count
    }
}
