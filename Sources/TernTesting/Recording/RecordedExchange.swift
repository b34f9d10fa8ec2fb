import Foundation
import Tern

/// A request or an entry's request, in the terms they are matched in: the method, the URL's
/// origin and decoded path (what entries are looked up by), its query items decoded.
struct MatchKey: Sendable {
    let method: String
    /// `scheme://host[:port]`, in lower case, the scheme's own port left out, and a loopback
    /// host's (`127.0.0.1`, `::1`, `localhost`): a test's server takes another at each run.
    let origin: String
    /// The path, percent-decoded but for an encoded slash (and the `%` of a decoded one); `/`
    /// when empty.
    let path: String
    let query: [HTTPArchive.Field]

    init(method: String, url: String) {
        self.method = method.uppercased()
        let components = URLComponents(string: url)
        let scheme = components?.scheme?.lowercased() ?? ""
        let host = components?.host?.lowercased() ?? ""
        var origin = scheme + "://" + host
        if let port = components?.port, !(scheme == "http" && port == 80), !(scheme == "https" && port == 443),
           !["127.0.0.1", "::1", "[::1]", "localhost"].contains(host) {
            origin += ":\(port)"
        }
        self.origin = origin
        let path = Self.decoded(components?.percentEncodedPath ?? "")
        self.path = path.isEmpty ? "/" : path
        query = Self.queryItems(of: components).map { HTTPArchive.Field(name: $0.name, value: $0.value ?? "") }
    }

    /// The query's items as a server reads them, a `+` as a space (a form's encoding, which
    /// servers apply to queries): `q=tern+bird` and `q=tern%2Bbird` are two searches, and read
    /// alike, each was answered the other's.
    private static func queryItems(of components: URLComponents?) -> [URLQueryItem] {
        guard var components, let query = components.percentEncodedQuery, query.contains("+") else { return components?.queryItems ?? [] }
        components.percentEncodedQuery = query.replacingOccurrences(of: "+", with: "%20")
        return components.queryItems ?? []
    }

    /// `path` percent-decoded, but for `%2F`: a slash in a name (`/files/a%2Fb`, the file `a/b`)
    /// is another resource than a slash between names (`/files/a/b`), and decoded alike, each
    /// answered the other's request. A `%` decoded is written `%25` again, so that no decoded
    /// `%2F` passes for an encoded slash.
    static func decoded(_ path: String) -> String {
        path.replacingOccurrences(of: "%2f", with: "%2F").components(separatedBy: "%2F")
            .map { ($0.removingPercentEncoding ?? $0).replacingOccurrences(of: "%", with: "%25") }
            .joined(separator: "%2F")
    }

    /// What entries are looked up by.
    var lookup: String { method + " " + origin + path }
}

/// An entry ready to be matched: its key worked out once, and how many times it answered.
struct RecordedExchange: Sendable {
    var entry: HTTPArchive.Entry
    let key: MatchKey
    var answered = 0

    /// The request headers the recorded response names in its `Vary`, in lower case, but
    /// `Accept-Encoding`, which the transport sets below what is recorded.
    let variesBy: [String]

    init(_ entry: HTTPArchive.Entry) {
        self.entry = entry
        key = MatchKey(method: entry.request.method, url: entry.request.url)
        variesBy = (entry.response.headers ?? []).filter { $0.name.lowercased() == "vary" }
            .flatMap { $0.value.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty && $0 != "*" && $0 != "accept-encoding" }
    }

    /// Whether `headers` carry the recorded request's value of each header the response varies
    /// by: of several exchanges recorded for one URL, the one recorded for this request.
    func agreesOnVary(_ headers: HTTPHeaders) -> Bool {
        variesBy.allSatisfy { name in
            let recorded = entry.request.headers?.first { $0.name.lowercased() == name }?.value
            return Self.header(recorded, matches: headers[name])
        }
    }

    /// Whether a header's value as sent matches the one recorded, in which each placeholder
    /// stands for any value: `sessionid=[redacted]` for any session's cookie.
    static func header(_ recorded: String?, matches sent: String?) -> Bool {
        guard let recorded, let sent, recorded != sent else { return recorded == sent }
        return recorded.contains(Redactor.placeholder) && BodyValues.matches(recorded: Data(recorded.utf8), sent: Data(sent.utf8))
    }

    /// The entry as an unmatched request lists it.
    var description: String { "\(key.method) \(entry.request.url) (\(entry.response.status))" }

    /// Why the entry does not answer a request, and how far it is from it; `nil` when it answers.
    /// With `redactor`, the request's values a recording hides (its credentials, the named
    /// fields' values however short) are not told.
    func mismatch(with request: MatchKey, headers: HTTPHeaders, body: SentBody, options: RecordingOptions,
                  telling redactor: Redactor? = nil) -> (reason: String, distance: Int)? {
        var reasons: [String] = []
        var distance = 0
        if key.method != request.method {
            reasons.append("method is \(request.method), not \(key.method)")
            distance += 4
        }
        if key.origin != request.origin {
            reasons.append("origin is \(request.origin), not \(key.origin)")
            distance += 4
        }
        if key.path != request.path {
            reasons.append("path is \(request.path), not \(key.path)")
            let mine = key.path.split(separator: "/"), theirs = request.path.split(separator: "/")
            distance += 2 + zip(mine, theirs).filter { $0 != $1 }.count * 2 + abs(mine.count - theirs.count) * 2
        }
        let queryDifferences = Self.differences(recorded: key.query, sent: request.query, what: "query item", telling: redactor)
        reasons += queryDifferences
        distance += queryDifferences.count
        // A 304 or a 412 answers the conditions it was asked with (a cache's, say), and no
        // request without them: replayed to a plain GET, a 304 is an answer nobody asked for.
        // So does a 206 or a 416 its range: replayed to a request for the whole, a part would be
        // taken for the whole body.
        let conditions = (Self.answersConditions.contains(entry.response.status) ? Self.conditionFields : [])
            + (Self.answersRanges.contains(entry.response.status) ? Self.rangeFields : [])
        // An event source's reconnect says the last event it heard: the connection recorded
        // after another event would replay events it has (the last one, again and again).
        let resumes = options.matchedHeaders.contains { $0.lowercased() == "last-event-id" } ? [] : ["Last-Event-ID"]
        for name in options.matchedHeaders + conditions + resumes {
            let recorded = entry.request.headers?.first { $0.name.lowercased() == name.lowercased() }?.value
            let sent = headers[name]
            guard !Self.header(recorded, matches: sent) else { continue }
            let told = sent.map { redactor?.headerNames.contains(name.lowercased()) == true ? Redactor.placeholder : $0 }
            reasons.append("header \(name) is \(told ?? "missing"), not \(recorded ?? "missing")")
            distance += 1
        }
        if options.matchesBody, let reason = bodyMismatch(body, contentType: headers["Content-Type"] ?? "", telling: redactor) {
            reasons.append(reason)
            distance += 2
        }
        return reasons.isEmpty ? nil : (reasons.joined(separator: "; "), distance)
    }

    /// The statuses that answer a request's conditions, and the fields that state them.
    private static let answersConditions: Set = [304, 412]
    private static let conditionFields = ["If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since"]
    /// The statuses that answer a request's range, and the fields that state it.
    private static let answersRanges: Set = [206, 416]
    private static let rangeFields = ["Range", "If-Range"]

    /// What differs between two lists of fields: those of different names in any order, those of
    /// one name in the order written, as a list's items (`tag=a&tag=b`) are. A recorded
    /// placeholder matches any value. The sent values of the names `redactor` hides are not told.
    static func differences(recorded: [HTTPArchive.Field], sent: [HTTPArchive.Field], what: String, telling redactor: Redactor? = nil) -> [String] {
        var names: [String] = []
        for field in recorded + sent where !names.contains(field.name) { names.append(field.name) }
        return names.flatMap { name -> [String] in
            let kept = recorded.filter { $0.name == name }.map(\.value), given = sent.filter { $0.name == name }.map(\.value)
            if given.isEmpty { return ["\(what) \(name) is missing"] }
            let told = redactor?.isSecret(name) == true ? given.map { _ in Redactor.placeholder } : given
            if kept.isEmpty { return told.map { "\(what) \(name)=\($0) was not recorded" } }
            let agree = kept.count == given.count && zip(kept, given).allSatisfy { $0 == $1 || $0 == Redactor.placeholder }
            return agree ? [] : ["\(what) \(name) is \(told.joined(separator: ", ")), not \(kept.joined(separator: ", "))"]
        }
    }

    /// Why `sent` is not the recorded body, or `nil` when it is.
    private func bodyMismatch(_ sent: SentBody, contentType: String, telling redactor: Redactor?) -> String? {
        let postData = entry.request.postData
        if let digest = postData?.sha256 {
            // Or as a file recorded before a JSON part's members were put in order took it.
            let matches = digest == sent.digests.ordered || digest == sent.digests.unordered
            return matches ? nil : "body (\(sent.count) bytes) is not the recorded one (\(postData?.size ?? 0) bytes)"
        }
        let recorded = HTTPArchive.bytes(postData?.text, encoding: postData?.encoding)
        guard sent.isWhole else { return "body (\(sent.count) bytes) is not the recorded one (\(recorded.count) bytes)" }
        let body = sent.kept
        if recorded == body { return nil }
        let type = contentType.lowercased()
        if let sent = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]),
           let kept = try? JSONSerialization.jsonObject(with: recorded, options: [.fragmentsAllowed]) {
            return BodyValues.equal(recorded: kept, sent: sent) ? nil : "JSON body differs: \(snippet(redactor?.hidingNamedFields(in: body, contentType: contentType) ?? body))"
        }
        if type.contains("x-www-form-urlencoded") {
            let differences = Self.differences(recorded: BodyValues.form(recorded), sent: BodyValues.form(body), what: "form field", telling: redactor)
            return differences.first
        }
        if type.contains("multipart/"), BodyValues.boundary(contentType) != nil,
           let recordedType = postData?.mimeType, BodyValues.boundary(recordedType) != nil,
           BodyValues.matches(recorded: ComparableBody.of(recorded, contentType: recordedType).ordered, sent: ComparableBody.of(body, contentType: contentType).ordered) {
            return nil
        }
        return "body differs: \(snippet(redactor?.hidingNamedFields(in: body, contentType: contentType) ?? body))"
    }

    private func snippet(_ body: Data) -> String {
        let text = String(decoding: body.prefix(80), as: UTF8.self)
        return body.count > 80 ? text + "…" : text
    }
}

/// Bodies compared as values.
enum BodyValues {
    /// Whether two JSON values are equal, a recorded placeholder matching any value.
    static func equal(recorded: Any, sent: Any) -> Bool {
        if let text = recorded as? String, text == Redactor.placeholder { return true }
        switch (recorded, sent) {
        case let (recorded as [String: Any], sent as [String: Any]):
            return recorded.count == sent.count && recorded.allSatisfy { key, value in sent[key].map { equal(recorded: value, sent: $0) } ?? false }
        case let (recorded as [Any], sent as [Any]):
            return recorded.count == sent.count && zip(recorded, sent).allSatisfy { equal(recorded: $0, sent: $1) }
        case let (recorded as String, sent as String):
            return recorded == sent
        case let (recorded as NSNumber, sent as NSNumber):
            return recorded.isJSONBoolean == sent.isJSONBoolean && recorded == sent
        case (is NSNull, is NSNull):
            return true
        default:
            return false
        }
    }

    /// A form body's fields, decoded.
    static func form(_ body: Data) -> [HTTPArchive.Field] {
        String(decoding: body, as: UTF8.self).split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (text: Substring) in String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(text) }
            return HTTPArchive.Field(name: decode(parts[0]), value: parts.count > 1 ? decode(parts[1]) : "")
        }
    }

    /// A multipart type's boundary.
    static func boundary(_ contentType: String) -> String? {
        MediaTypeField.parameter("boundary", in: contentType)
    }
}
