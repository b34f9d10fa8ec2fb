import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tern

/// Exchanges into entries, and entries into stub answers.
extension HTTPArchive {
    /// A request body longer than this is recorded by its SHA-256 (a multipart body's taken
    /// without its boundary) and length.
    static let largestKeptRequestBody = 64 << 10

    /// The entry for a request: its headers sorted by name, its body as text, Base64, or a
    /// digest when large.
    static func request(_ request: TransportRequest, recorded: RecordedRequest, body: SentBody) -> Request {
        let url = request.urlRequest.url
        let items = url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: true)?.queryItems } ?? []
        var postData: PostData?
        if body.count > 0 {
            let mimeType = recorded.headers["Content-Type"] ?? ""
            if !body.isWhole {
                postData = PostData(mimeType: mimeType, sha256: body.digests.ordered, size: body.count)
            } else {
                let (text, encoding) = bodyText(body.kept, mimeType: mimeType)
                postData = PostData(mimeType: mimeType, text: text, encoding: encoding)
            }
        }
        return Request(
            method: recorded.method, url: url?.absoluteString ?? recorded.target, httpVersion: "HTTP/1.1",
            headers: sorted(recorded.headers), queryString: items.map { Field(name: $0.name, value: $0.value ?? "") },
            cookies: [], headersSize: -1, bodySize: body.count, postData: postData)
    }

    /// The entry for a response: its body decoded, as text or Base64.
    static func response(_ head: ResponseHead, body: Data) -> Response {
        let mimeType = head.headers["Content-Type"] ?? ""
        let (text, encoding) = bodyText(body, mimeType: mimeType)
        return Response(
            status: head.statusCode, statusText: HTTPURLResponse.localizedString(forStatusCode: head.statusCode),
            httpVersion: head.httpVersion ?? "HTTP/1.1", headers: sorted(head.headers), cookies: [],
            content: Content(size: body.count, mimeType: mimeType, text: text, encoding: encoding),
            redirectURL: head.headers["Location"] ?? "", headersSize: -1, bodySize: -1)
    }

    /// The headers sorted by name, so that a re-recording diffs line by line.
    private static func sorted(_ headers: HTTPHeaders) -> [Field] {
        headers.map { Field(name: $0.name, value: $0.value) }.sorted { $0.name.lowercased() < $1.name.lowercased() }
    }

    /// A body as text when its type is text and it is UTF-8, else as Base64.
    static func bodyText(_ body: Data, mimeType: String) -> (text: String, encoding: String?) {
        if isText(mimeType), let text = String(data: body, encoding: .utf8) { return (text, nil) }
        return (body.base64EncodedString(), "base64")
    }

    static func isText(_ mimeType: String) -> Bool {
        let type = mimeType.lowercased()
        return type.isEmpty || type.hasPrefix("text/") || ["json", "xml", "javascript", "x-www-form-urlencoded", "graphql"].contains { type.contains($0) }
    }

    /// The bytes of a body written as `text` with `encoding`.
    static func bytes(_ text: String?, encoding: String?) -> Data {
        guard let text else { return Data() }
        if encoding == "base64" { return Data(base64Encoded: text) ?? Data() }
        return Data(text.utf8)
    }
}

extension HTTPArchive.Entry {
    /// A recorded `Location` (or `Content-Location`) on the loopback origin its request was
    /// recorded on, moved to the one it is replayed to: a test's server takes another port at
    /// each run, which the match leaves out, and the hop that stayed at its origin when recorded
    /// would leave it (its credentials dropped, a policy refusing cross-origin hops refusing it).
    /// Any other stays.
    static func location(_ location: String, recordedFor recorded: String, replayedTo url: URL) -> String {
        guard var moved = URLComponents(string: location), let from = URLComponents(string: recorded),
              let to = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let host = moved.host?.lowercased(), Self.loopbackHosts.contains(host),
              moved.scheme?.lowercased() == from.scheme?.lowercased(), host == from.host?.lowercased(), moved.port == from.port,
              to.host.map({ Self.loopbackHosts.contains($0.lowercased()) }) == true else { return location }
        moved.scheme = to.scheme
        moved.host = to.host
        moved.port = to.port
        return moved.string ?? location
    }

    /// A recorded `Link` field's targets (a listing's next page), each moved as a `Location` is.
    static func links(_ field: String, recordedFor recorded: String, replayedTo url: URL) -> String {
        var moved = ""
        var rest = field[...]
        while let open = rest.firstIndex(of: "<"), let close = rest[open...].firstIndex(of: ">") {
            let target = rest.index(after: open)
            moved += rest[..<target] + location(String(rest[target..<close]), recordedFor: recorded, replayedTo: url)
            rest = rest[close...]
        }
        return moved + rest
    }

    private static let loopbackHosts: Set = ["127.0.0.1", "::1", "[::1]", "localhost"]

    /// Headers a replayed response cannot carry as recorded: its body is decoded already and
    /// its length is the stub's to set; HTTP/2's pseudo-headers are no fields.
    private static let unreplayed: Set<String> = ["content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"]

    /// The answer replaying the entry to a request for `url`: the whole body at once, or, on
    /// `clock`, each chunk after its recorded pause; an exchange cut short, as far as it came,
    /// then its failure.
    func answer(to url: URL?, pacedOn clock: (any APIClock)?) -> StubAnswer {
        let failure = error.map { URLError(URLError.Code(rawValue: $0) ?? .unknown) }
        if response.status == 0 { return .failure(failure ?? URLError(.unknown)) }
        var headers = HTTPHeaders()
        // A response that has no body (to a HEAD, a 204, a 304) states the length of one it does
        // not carry, which is what a HEAD asks for: replayed as recorded, with no body, as a
        // transport hands it over. (Set by the stub, it was the empty body's, 0.)
        let bodyless = ResponseHead.hasNoBody(statusCode: response.status, method: request.method)
        // An exchange cut short keeps its length, which tells the pipeline it was (FoundationNetworking
        // names no cause).
        // So does its coding: its bytes came decoded, but a download cut short in a coding keeps
        // none of them for a resume, as when it was recorded.
        let unreplayed = failure == nil && !bodyless ? Self.unreplayed : Self.unreplayed.subtracting(["content-length", "content-encoding"])
        for field in response.headers ?? [] where !field.name.hasPrefix(":") && !unreplayed.contains(field.name.lowercased()) {
            // A repeated field (Set-Cookie) keeps its values, joined as URLSession joins them.
            headers[field.name] = headers[field.name].map { $0 + ", " + field.value } ?? field.value
        }
        if let url {
            for name in ["Location", "Content-Location"] {
                if let value = headers[name] { headers[name] = Self.location(value, recordedFor: request.url, replayedTo: url) }
            }
            if let links = headers["Link"] { headers["Link"] = Self.links(links, recordedFor: request.url, replayedTo: url) }
        }
        if bodyless { return StubAnswer(outcome: .streamed(status: response.status, headers: headers, pieces: []), endsWith: failure) }
        // A browser that did not keep a body (exported without content, evicted) gives its size
        // alone: that answer is not in the archive, and replayed empty it would pass for one.
        if response.content?.text == nil, let size = response.content?.size, size > 0 {
            return .failure(URLError(.resourceUnavailable, userInfo: [NSLocalizedDescriptionKey:
                "the recording holds no body for \(request.method) \(request.url): its entry gives the size, \(size) bytes, and no text"]))
        }
        let body = HTTPArchive.bytes(response.content?.text, encoding: response.content?.encoding)
        let chunks = (clock != nil || open == true) ? chunks ?? [] : []
        guard !chunks.isEmpty || open == true || failure != nil else {
            return .status(response.status, headers: headers, body: body)
        }
        var pieces: [(after: TimeInterval, data: Data)] = []
        var start = 0
        for chunk in chunks where start < body.count {
            // A size past what is left takes the rest (a body scrubbed of a token is shorter than
            // its chunks); added to `start` first, a file's `Int.max` trapped.
            let end = start + min(chunk.size, body.count - start)
            pieces.append((clock == nil ? 0 : chunk.after, body.subdata(in: start..<end)))
            start = end
        }
        if start < body.count { pieces.append((0, body.subdata(in: start..<body.count))) }
        return StubAnswer(outcome: .streamed(status: response.status, headers: headers, pieces: pieces), staysOpen: open == true, endsWith: failure)
    }
}
