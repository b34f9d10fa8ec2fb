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
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self) + Data("\n".utf8)
    }
}
