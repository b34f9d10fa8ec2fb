import Foundation

/// An HTTP Archive (HAR 1.2) as a recording keeps it: the fields a browser writes that replay
/// needs, decoded with `Codable`; any other field (`pages`, `cache`, `_initiator`, a browser's
/// own `_` fields) is skipped on reading. Fields a hand-written or exported file may leave out
/// are optional, and always written.
struct HTTPArchive: Codable, Sendable {
    var log: Log

    struct Log: Codable, Sendable {
        var version: String? = "1.2"
        var creator: NameVersion? = NameVersion(name: "TernTesting", version: "1")
        var entries: [Entry]
    }

    struct NameVersion: Codable, Sendable {
        var name: String
        var version: String
    }

    /// One exchange: a request and its response.
    struct Entry: Codable, Sendable {
        var startedDateTime: String?
        /// Milliseconds, from the request's start to its response's end.
        var time: Double?
        var request: Request
        var response: Response
        var timings: Timings?
        /// When the body came: each chunk's size and seconds after the one before (or the
        /// head), for a stream replayed at its pace.
        var chunks: [Chunk]?
        /// Whether the exchange was still going when the client left it (a stream it stopped
        /// reading): replayed, it stays open until cancelled.
        var open: Bool?
        /// How an exchange without a response failed: a `URLError`'s code.
        var error: Int?

        enum CodingKeys: String, CodingKey {
            case startedDateTime, time, request, response, timings
            case chunks = "_chunks", open = "_open", error = "_transportError"
        }
    }

    struct Chunk: Codable, Sendable, Equatable {
        var after: Double
        var size: Int
    }

    struct Request: Codable, Sendable {
        var method: String
        var url: String
        var httpVersion: String?
        var headers: [Field]?
        var queryString: [Field]?
        var cookies: [Field]?
        var headersSize: Int?
        var bodySize: Int?
        var postData: PostData?
    }

    /// A request's body: its text, or, when large or not text, its SHA-256 and length.
    struct PostData: Codable, Sendable {
        var mimeType: String?
        var text: String?
        var params: [Field]?
        /// `base64` when ``text`` is, else absent.
        var encoding: String?
        var sha256: String?
        var size: Int?

        enum CodingKeys: String, CodingKey {
            case mimeType, text, params, encoding, sha256 = "_sha256", size = "_size"
        }
    }

    struct Response: Codable, Sendable {
        var status: Int
        var statusText: String?
        var httpVersion: String?
        var headers: [Field]?
        var cookies: [Field]?
        var content: Content?
        var redirectURL: String?
        var headersSize: Int?
        var bodySize: Int?
    }

    /// A response's body, decoded (decompressed): text, or Base64 with `encoding`.
    struct Content: Codable, Sendable {
        var size: Int?
        var mimeType: String?
        var text: String?
        var encoding: String?
    }

    /// Milliseconds each phase took; -1 for a phase that does not apply.
    struct Timings: Codable, Sendable {
        var blocked: Double?
        var dns: Double?
        var connect: Double?
        var send: Double?
        var wait: Double?
        var receive: Double?
        var ssl: Double?
    }

    /// A header, query item or cookie. A cookie's other fields (`path`, `httpOnly`…) are skipped.
    struct Field: Codable, Sendable, Equatable {
        var name: String
        var value: String
    }
}

extension HTTPArchive {
    /// Reads a file, its values checked (``check()``); an absent or empty file is an empty
    /// archive. Through Tern's own reading of JSON: a recording of thousands of exchanges is
    /// megabytes.
    static func read(from file: URL) throws -> HTTPArchive {
        guard FileManager.default.fileExists(atPath: file.path) else { return HTTPArchive(log: Log(entries: [])) }
        let data = try Data(contentsOf: file)
        guard !data.isEmpty else { return HTTPArchive(log: Log(entries: [])) }
        let archive = try JSONDecoder().decodeFaster(HTTPArchive.self, from: data)
        try archive.check()
        return archive
    }

    /// The archive as its file holds it: pretty printed, keys sorted, so that a re-recording
    /// reads as a diff.
    func encoded() throws -> Data {
        try Self.encoder.encode(self) + Data("\n".utf8)
    }

    /// Pretty printed, keys sorted, slashes as they are.
    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

/// The file assembled from its entries' bytes, each encoded once: recording the thousandth
/// exchange encodes that exchange, not the thousand (300 exchanges of 16 KB bodies took 12.6 s
/// when each re-encoded the whole archive). The bytes are ``HTTPArchive/encoded()``'s, exactly.
extension HTTPArchive {
    /// Where entries sit in the file: what comes before the first, between two, after the last,
    /// and how far in each line of an entry is. Found by encoding an archive of one entry and
    /// of two, not assumed: `nil` when it cannot be found, and then the file is encoded whole.
    struct Layout: Sendable {
        let head: Data
        let separator: Data
        let tail: Data
        let indent: Int
    }

    static let layout: Layout? = try? findLayout()

    /// An entry's bytes as the file holds them, indented where it sits in `entries`: `nil`
    /// without a ``layout``.
    static func encodedEntry(_ entry: Entry) throws -> Data? {
        guard let layout else { return nil }
        return try indented(encoder.encode(entry), by: layout.indent)
    }

    /// The file of the entries whose bytes (``encodedEntry(_:)``) are `entries`, in that order:
    /// `nil` without a ``layout``, or without entries (an empty array is laid out otherwise).
    static func assembled(_ entries: [Data]) -> Data? {
        guard let layout, !entries.isEmpty else { return nil }
        var file = Data(capacity: layout.head.count + layout.tail.count + entries.reduce(0) { $0 + $1.count + layout.separator.count })
        file += layout.head
        for (index, entry) in entries.enumerated() {
            if index > 0 { file += layout.separator }
            file += entry
        }
        file += layout.tail   // appended, not added: a sum is a copy of the file
        return file
    }

    /// `json` with `indent` spaces after each line break but before an empty line: a line break
    /// in encoded JSON is layout (one in a string is escaped), and an empty array or object is
    /// laid out as an empty line without spaces.
    static func indented(_ json: Data, by indent: Int) -> Data {
        guard indent > 0 else { return json }
        let newline = UInt8(ascii: "\n"), spaces = Data(repeating: UInt8(ascii: " "), count: indent)
        var result = Data(capacity: json.count + json.count / 8)
        var start = json.startIndex
        while let index = json[start...].firstIndex(of: newline) {
            result += json[start...index]
            if json.index(after: index) < json.endIndex, json[json.index(after: index)] != newline { result += spaces }
            start = json.index(after: index)
        }
        result += json[start...]
        return result
    }

    /// The layout of today's ``encoded()``, read off archives of one and two entries (with
    /// empty arrays, whose layout indenting must keep).
    private static func findLayout() throws -> Layout? {
        let sample = Entry(request: Request(method: "GET", url: "https://tern.example/layout", headers: [], queryString: []),
                           response: Response(status: 200, headers: [Field(name: "A", value: "b\n\"c\"")], cookies: []))
        let alone = try encoder.encode(sample)
        let one = try HTTPArchive(log: Log(entries: [sample])).encoded()
        let two = try HTTPArchive(log: Log(entries: [sample, sample])).encoded()
        for indent in 0...32 {
            let entry = indented(alone, by: indent)
            guard let range = one.range(of: entry) else { continue }
            let head = one[..<range.lowerBound], tail = one[range.upperBound...]
            guard two.count > head.count + tail.count + 2 * entry.count, two.starts(with: head), two.suffix(tail.count) == tail else { continue }
            let middle = two.dropFirst(head.count).dropLast(tail.count)
            guard middle.starts(with: entry), middle.suffix(entry.count) == entry else { continue }
            let layout = Layout(head: Data(head), separator: Data(middle.dropFirst(entry.count).dropLast(entry.count)), tail: Data(tail), indent: indent)
            guard layout.head + entry + layout.separator + entry + layout.tail == two else { continue }
            return layout
        }
        return nil
    }
}
