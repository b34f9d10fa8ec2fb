import Foundation
import Tern
import TernTesting

/// The loopback server the pipeline tests talk to: one route per behaviour under test.
enum TestServer {
    /// Started once for the whole run; every test reads it with `try TestServer.shared.get()`.
    static let shared = Result { try LoopbackServer(handler: route) }

    static var baseURL: String {
        get throws { try shared.get().baseURL }
    }

    static func route(_ request: RecordedRequest) -> ServerResponse {
        let segments = request.path.split(separator: "/").map(String.init)
        switch segments.first ?? "" {
        case "echo":
            return .json(Echo(request))
        case "status":
            let code = Int(segments.last ?? "") ?? 500
            return .json(#"{"code": \#(code), "message": "status \#(code)"}"#, status: code)
        case "delay":
            let milliseconds = Int(segments.last ?? "") ?? 0
            return ServerResponse.json(#"{"delayed": \#(milliseconds)}"#).with(.delayed(Double(milliseconds) / 1000))
        case "stall":
            return ServerResponse().with(.stall(10))
        case "hangup":
            return ServerResponse().with(.hangUp)
        case "truncated":
            return ServerResponse.json(String(repeating: " ", count: 1000)).with(.truncated(afterBytes: 10))
        case "malformed":
            return .json(#"{"name": "#)
        case "products":
            return .json(#"[{"name": "tern", "price": 3}, {"name": "gull", "price": 5}]"#)
        case "bad-products":
            return .json(#"[{"name": "tern", "price": 3}, {"name": "gull", "price": "cheap"}]"#)
        case "envelope":
            return .json(#"{"data": {"items": [{"name": "tern", "price": 3}]}, "page": 1}"#)
        case "page":
            return .json(#"{"page": 2, "results": [{"name": "tern", "price": 3}]}"#)
        case "empty":
            return ServerResponse(status: Int(segments.last ?? "") ?? 204)
        case "huge":
            let count = Int(request.queryItems.first { $0.name == "bytes" }?.value ?? "") ?? 0
            return ServerResponse(body: patterned(bytes: count))
        case "latin1":
            return ServerResponse(headers: ["Content-Type": "text/plain; charset=iso-8859-1"], body: Data([0x63, 0x61, 0x66, 0xE9]))
        case "multipart":
            return .json(MultipartEcho(request))
        case "redirect":
            // /redirect/<status>?to=<location>: that status, and the location if given.
            let location = request.queryItems.first { $0.name == "to" }?.value
            return ServerResponse(status: Int(segments.last ?? "") ?? 302, headers: location.map { ["Location": $0] } ?? [:],
                                  body: Data("moved".utf8))
        case "download":
            return download(request)
        case "linked":
            // Two Link fields, relative targets to be resolved against the URL that answered.
            var response = ServerResponse.json("[]")
            response.repeatedFields = [("Link", #"<items?page=2>; rel="next""#), ("Link", #"</items?page=9>; rel="last""#)]
            return response
        case "loop":
            return ServerResponse(status: 302, headers: ["Location": "/loop"])
        default:
            return .json(#"{"code": 404, "message": "no route"}"#, status: 404)
        }
    }

    /// `/download?bytes=<n>&version=<v>`: a file of `n` bytes (200,000 unless given) whose content
    /// and strong `ETag` depend on `version`, with range support. Options: `validator=weak`,
    /// `lastModified` or `none`; `cut=<k>` or `stall=<k>`: a request without `Range` gets only
    /// `k` bytes, then the connection closes or falls silent (for 45 s: under the thread sanitizer
    /// and a full suite, FoundationNetworking took over ten seconds to act on a cancel, and the
    /// server hanging up first turned the cancel into a lost connection); `ignoreRange`: always the whole
    /// file; `shift`: a 206 that starts one byte before the range asked for; `unvalidated`: a 206
    /// with neither `ETag` nor `Last-Modified`; `validator=lastModifiedNow`: a `Last-Modified`
    /// of the same second as the answer's `Date`; `part=<start>-<end>`: a 206 with those bytes,
    /// whatever was asked.
    static func download(_ request: RecordedRequest) -> ServerResponse {
        let query = Dictionary(request.queryItems.map { ($0.name, $0.value) }, uniquingKeysWith: { $1 })
        let version = query["version"] ?? "1"
        let body = downloadBody(bytes: Int(query["bytes"] ?? "") ?? 200_000, version: version)
        let modified = "Sun, 22 Nov 2026 10:00:0\(version.count % 10) GMT"
        var response = switch query["validator"] {
        case "weak": ServerResponse.file(body, for: request, etag: "W/\"v\(version)\"")
        case "lastModified", "lastModifiedNow": ServerResponse.file(body, for: request, lastModified: modified)
        case "none": ServerResponse.file(body, for: request)
        default: ServerResponse.file(body, for: request, etag: "\"v\(version)\"")
        }
        // The time of the answer: an hour after the file changed, or the same second for
        // `lastModifiedNow`, which makes its date no strong validator.
        if response.headers["Last-Modified"] != nil {
            response.headers["Date"] = query["validator"] == "lastModifiedNow" ? modified : "Sun, 22 Nov 2026 11:00:00 GMT"
        }
        let ranged = request.headers["Range"] != nil
        if query["ignoreRange"] != nil, ranged {
            response = .file(body, for: RecordedRequest(method: request.method, target: request.target, headers: [:], body: Data()),
                             etag: response.headers["ETag"], lastModified: response.headers["Last-Modified"])
        }
        if query["shift"] != nil, response.status == 206, let range = response.headers["Content-Range"],
           let start = Int(range.dropFirst("bytes ".count).prefix { $0 != "-" }), start > 0 {
            response.body = body.subdata(in: (start - 1)..<body.count)
            response.headers["Content-Range"] = "bytes \(start - 1)-\(body.count - 1)/\(body.count)"
        }
        if query["unvalidated"] != nil, ranged {
            // If-Range ignored, and a 206 that names no validator: which file its range is of,
            // nothing says.
            var headers = request.headers
            headers["If-Range"] = nil
            response = .file(body, for: RecordedRequest(method: request.method, target: request.target, headers: headers, body: Data()))
        }
        if let part = query["part"]?.split(separator: "-").compactMap({ Int($0) }), part.count == 2 {
            response = .file(body, for: RecordedRequest(method: request.method, target: request.target,
                                                        headers: ["Range": "bytes=\(part[0])-\(part[1])"], body: Data()), etag: response.headers["ETag"])
        }
        if !ranged, let cut = query["cut"].flatMap(Int.init) { return response.with(.truncated(afterBytes: cut)) }
        if !ranged, let stall = query["stall"].flatMap(Int.init) { return response.with(.stalled(afterBytes: stall, seconds: 45)) }
        return response
    }

    /// The content `/download` serves: different for each version.
    static func downloadBody(bytes: Int, version: String) -> Data {
        patterned(bytes: bytes, seed: version.utf8.reduce(0) { $0 &+ Int($1) })
    }
}

/// What the server received, sent back as JSON.
struct Echo: Codable, Sendable {
    let method: String
    let path: String
    let query: String
    let headers: [[String]]
    let body: Data

    init(_ request: RecordedRequest) {
        method = request.method
        path = request.path
        query = request.query
        headers = request.headers.map { [$0.name, $0.value] }
        body = request.body
    }

    /// The value of the header called `name`, whatever its case.
    func header(_ name: String) -> String? {
        headers.first { $0[0].lowercased() == name.lowercased() }?[1]
    }

    /// The query's pairs, percent-decoded.
    var queryItems: [[String]] {
        query.split(separator: "&").map { pair in
            pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                .map { String($0).removingPercentEncoding ?? String($0) }
        }
    }
}

/// A multipart body as the server parsed it back.
struct MultipartEcho: Codable, Sendable {
    struct Part: Codable, Sendable, Equatable {
        let name: String?
        let filename: String?
        let contentType: String?
        let size: Int
        let checksum: UInt64
        let text: String?
    }

    let contentType: String
    let contentLength: String?
    let transferEncoding: String?
    let bodySize: Int
    let parts: [Part]

    init(_ request: RecordedRequest) {
        contentType = request.headers["Content-Type"] ?? ""
        contentLength = request.headers["Content-Length"]
        transferEncoding = request.headers["Transfer-Encoding"]
        bodySize = request.body.count
        let boundary = contentType.components(separatedBy: "boundary=").last ?? ""
        parts = Self.parse(request.body, boundary: boundary)
    }

    /// Splits a multipart body at its boundary (RFC 7578), strictly: a malformed body gives no parts.
    static func parse(_ body: Data, boundary: String) -> [Part] {
        let delimiter = Data("--\(boundary)".utf8)
        let crlf = Data("\r\n".utf8)
        var parts: [Part] = []
        guard var cursor = body.range(of: delimiter)?.upperBound else { return [] }
        while true {
            // After a delimiter: "--" closes the body, CRLF starts a part.
            if body[cursor...].starts(with: Data("--".utf8)) { return parts }
            guard body[cursor...].starts(with: crlf),
                  let headEnd = body.range(of: Data("\r\n\r\n".utf8), in: cursor..<body.endIndex),
                  let next = body.range(of: crlf + delimiter, in: headEnd.upperBound..<body.endIndex) else { return [] }
            let head = String(decoding: body[(cursor + 2)..<headEnd.lowerBound], as: UTF8.self)
            let content = body[headEnd.upperBound..<next.lowerBound]
            var headers: [String: String] = [:]
            for line in head.components(separatedBy: "\r\n") {
                let pair = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                if pair.count == 2 { headers[pair[0].lowercased()] = pair[1] }
            }
            let disposition = headers["content-disposition"] ?? ""
            parts.append(Part(
                name: parameter("name", in: disposition),
                filename: parameter("filename", in: disposition),
                contentType: headers["content-type"],
                size: content.count,
                checksum: fnv1a(content),
                text: content.count <= 256 ? String(decoding: content, as: UTF8.self) : nil
            ))
            cursor = next.upperBound
        }
    }

    private static func parameter(_ name: String, in disposition: String) -> String? {
        guard let range = disposition.range(of: "\(name)=\"") else { return nil }
        let rest = disposition[range.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }
}

/// A 64-bit FNV-1a hash: enough to tell whether two byte strings match.
func fnv1a(_ data: Data) -> UInt64 {
    data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }
}

/// `bytes` bytes that differ with `seed` and along the way, made with a plain loop: a `map`
/// over a range looks type metadata up behind a lock for every byte, which under the thread
/// sanitizer held a dozen threads for tens of seconds.
func patterned(bytes: Int, seed: Int = 0) -> Data {
    var data = Data(count: bytes)
    data.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) in
        for index in 0..<bytes {
            buffer[index] = UInt8(truncatingIfNeeded: index &* 31 &+ index >> 8 &+ seed)
        }
    }
    return data
}
