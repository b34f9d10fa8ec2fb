#if os(Linux)
import Foundation
import TernCore

/// A response head read line by line as libcurl hands it over: status line, fields, empty line,
/// with interim (1xx) heads passed over (a 101 refused) and a chunked body's trailers only
/// counted. A value that takes a line and says what it made of it; it knows nothing of libcurl
/// or the receiver.
struct ResponseHeadReader {
    /// A whole head, its repeated fields joined with commas under the first one's name, as
    /// URLSession joins them.
    struct Head: Equatable {
        let status: Int
        let httpVersion: String
        let fields: HTTPHeaders
        /// Each `Set-Cookie` field's value on its own: joined in ``fields``, a comma inside one
        /// would read as the start of another.
        let setCookies: [String]
    }

    /// Why a head is refused.
    enum Refusal: Equatable {
        /// Its bytes passed ``limit``.
        case tooLarge
        /// It is no HTTP, or frames its body more than one way: why, in words.
        case untrustworthy(String)
        /// Its status line says HTTP/2 or later on a connection that speaks HTTP/1.
        case claimsHTTP2
    }

    /// What a line made.
    enum Step {
        /// Nothing yet: read on.
        case more
        /// The head is whole.
        case head(Head)
        /// The head cannot be read from; the transfer stops.
        case refused(Refusal)
    }

    /// The most bytes of heads a response may send: a server that never ends its head would
    /// otherwise be kept in memory until the timeout. (libcurl 8.3 and later, and Debian's
    /// 7.88 since a backport, stop on their own, past a larger limit.)
    static let limit = 256 * 1024

    /// The status of the head being read, 0 before its status line.
    private(set) var status = 0
    /// Whether the whole head has been read.
    private(set) var isComplete = false
    private var httpVersion = "HTTP/1.1"
    /// The fields so far, in order.
    private var fields: [(name: String, value: String)] = []
    /// The bytes of heads so far (interim ones and trailers too).
    private var bytes = 0
    /// Whether the head being read has had its status line.
    private var hasStatusLine = false
    /// Whether the connection may speak HTTP/2 (HTTPS, where TLS negotiated it or cannot be
    /// asked): elsewhere a status line saying HTTP/2 or later is refused.
    var mayBeHTTP2: Bool

    /// A reader for a connection that speaks HTTP/1 only (plain HTTP), or that may speak HTTP/2.
    init(mayBeHTTP2: Bool = false) {
        self.mayBeHTTP2 = mayBeHTTP2
    }

    /// Reads one line, its line end included.
    mutating func read(_ bytes: UnsafeRawBufferPointer) -> Step {
        self.bytes += bytes.count
        guard self.bytes <= Self.limit else { return .refused(.tooLarge) }
        guard !isComplete else { return .more }   // trailers of a chunked body
        // The line end: CRLF, or LF alone (RFC 9112 lets a reader take it).
        var end = bytes.count
        if end > 0, bytes[end - 1] == UInt8(ascii: "\n") { end -= 1 }
        if end > 0, bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        let line = UnsafeRawBufferPointer(rebasing: bytes[..<end])
        if Self.hidesFramingBehindACarriageReturn(line) {
            return .refused(.untrustworthy("a carriage return inside a line of its head hides a length, a coding or the head's end from readers that take it for a space"))
        }
        if hasStatusLine, Self.beginsWithHTTP(line) {
            // No field's name has a slash. libcurl takes the line for a field, and the head's
            // framing and status from the lines before it; taken for a new head, a 500 was
            // handed over as the line's 200, and a head framed two ways went unseen.
            return .refused(.untrustworthy("a status line stands in the middle of its head"))
        }
        if !hasStatusLine {
            // The first line of a head, or of a head after a 1xx: a status line, or no HTTP.
            // An HTTP/1 connection saying another version is no HTTP either: libcurl 7.88 took
            // "HTTP/2 200", and "HTTP/200" too, for HTTP/2, and the server's other connections
            // for shared ones from then on (see `CurlExchange.connectionChosen(_:)`).
            if !mayBeHTTP2, line.count > 5, Self.beginsWithHTTP(line), line[5] != UInt8(ascii: "1") { return .refused(.claimsHTTP2) }
            guard ResponseHeadCheck.isStatusLine(line) else {
                return .refused(.untrustworthy("its status line is not HTTP's: \(Self.text(UnsafeRawBufferPointer(rebasing: line.prefix(64))))"))
            }
            hasStatusLine = true
            // The check above found the version, one space and three digits.
            let space = Self.index(of: UInt8(ascii: " "), in: line) ?? 0
            httpVersion = Self.text(UnsafeRawBufferPointer(rebasing: line[..<space]))
            status = line[(space + 1)...].prefix(3).reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            fields.removeAll(keepingCapacity: true)
            fields.reserveCapacity(16)
        } else if line.isEmpty {
            // An interim response: the real one follows, with a status line of its own. Not after
            // a 101: the connection now speaks another protocol, which no request of Tern's asks
            // for, and no HTTP answer may ever come (it waited for its timeout).
            guard !(100..<200).contains(status) else {
                guard status != 101 else { return .refused(.untrustworthy(ResponseHeadCheck.switchedProtocols)) }
                hasStatusLine = false
                return .more
            }
            if let problem = ResponseHeadCheck.problem(with: fields, httpVersion: httpVersion) { return .refused(.untrustworthy(problem)) }
            isComplete = true
            return .head(head())
        } else if line[0] == UInt8(ascii: " ") || line[0] == UInt8(ascii: "\t") {
            // An obsolete folded line continues the field before it; libcurl does not join it
            // to a length or a coding, and would read the body framed another way than we say.
            if let last = fields.last, last.name.caseInsensitiveEquals("content-length") || last.name.caseInsensitiveEquals("transfer-encoding") {
                return .refused(.untrustworthy("its \(last.name) is continued on a folded line, which readers take apart"))
            }
            if let last = fields.popLast() {
                fields.append((last.name, last.value + " " + Self.text(line).trimmingCharacters(in: .whitespaces)))
            }
        } else if let colon = Self.index(of: UInt8(ascii: ":"), in: line) {
            var start = colon + 1
            var stop = line.count
            while start < stop, line[start] == UInt8(ascii: " ") || line[start] == UInt8(ascii: "\t") { start += 1 }
            while stop > start, line[stop - 1] == UInt8(ascii: " ") || line[stop - 1] == UInt8(ascii: "\t") { stop -= 1 }
            fields.append((Self.text(UnsafeRawBufferPointer(rebasing: line[..<colon])),
                           Self.text(UnsafeRawBufferPointer(rebasing: line[start..<stop]))))
        }
        return .more
    }

    /// Whether a carriage return inside `line`, taken for a line's end as some readers take it,
    /// would begin a field that frames the body or end the head; libcurl takes it for a space.
    /// `200 OK\rContent-Length: 2`, or `X: y\r\r\n`, frames one body for one reading and another
    /// for the other. Anywhere else (a cookie's value, say) it stays, for what reads it to judge.
    private static func hidesFramingBehindACarriageReturn(_ line: UnsafeRawBufferPointer) -> Bool {
        var start = 0
        while let carriageReturn = index(of: UInt8(ascii: "\r"), in: line, from: start) {
            start = carriageReturn + 1
            let next = line[start..<(index(of: UInt8(ascii: "\r"), in: line, from: start) ?? line.count)]
            if next.isEmpty || startsIgnoringCase(next, with: "content-length") || startsIgnoringCase(next, with: "transfer-encoding") {
                return true
            }
        }
        return false
    }

    /// Where `byte` first stands in `bytes` at or after `start`, found by `memchr`: the generic
    /// search over a slice went byte by byte, a tenth of the head reader's time on the loop.
    private static func index(of byte: UInt8, in bytes: UnsafeRawBufferPointer, from start: Int = 0) -> Int? {
        guard start < bytes.count, let base = bytes.baseAddress,
              let found = memchr(base + start, Int32(byte), bytes.count - start) else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }

    /// Whether `line` begins with `HTTP/`, as a status line does.
    private static func beginsWithHTTP(_ line: UnsafeRawBufferPointer) -> Bool {
        guard line.count >= 5, let base = line.baseAddress else { return false }
        return memcmp(base, "HTTP/", 5) == 0
    }

    /// Whether `bytes` begin with `name` (letters in lower case, and dashes), in any ASCII case.
    private static func startsIgnoringCase(_ bytes: Slice<UnsafeRawBufferPointer>, with name: StaticString) -> Bool {
        guard bytes.count >= name.utf8CodeUnitCount else { return false }
        return zip(bytes, UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)).allSatisfy { $0 | 0x20 == $1 }
    }

    private func head() -> Head {
        Head(status: status, httpVersion: httpVersion, fields: HTTPHeaders(joining: Self.withoutRepeatedLocations(fields)),
             setCookies: fields.lazy.filter { $0.name.caseInsensitiveEquals("Set-Cookie") }.map(\.value))
    }

    /// `fields` with every `Location` after the first left out. The head check lets a repeat
    /// through only when it names the same URL; joined with a comma, as other repeated fields
    /// are, the two would be a URL neither named, and the redirect went there ("/next, /next"
    /// led to `/next,%20/next`).
    private static func withoutRepeatedLocations(_ fields: [(name: String, value: String)]) -> [(name: String, value: String)] {
        var found = false
        let repeats = fields.contains { field in
            guard field.name.caseInsensitiveEquals("location") else { return false }
            defer { found = true }
            return found
        }
        guard repeats else { return fields }
        var kept = false
        return fields.filter { field in
            guard field.name.caseInsensitiveEquals("location") else { return true }
            defer { kept = true }
            return !kept
        }
    }

    /// Header bytes as text: UTF-8 when they are valid UTF-8 (ASCII, as they almost always are,
    /// or a `Location` with a name in another script, as browsers read it), else Latin-1, as
    /// HTTP/1.1 reads field values (RFC 9110 §5.5): every byte a character.
    private static func text(_ bytes: UnsafeRawBufferPointer) -> String {
        if !bytes.contains(where: { $0 >= 0x80 }) { return String(decoding: bytes, as: UTF8.self) }   // ASCII: as it is
        // Not for every field: unspecialized, it looks its types up in the runtime on each call.
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: bytes.map { Unicode.Scalar($0) })
        return String(scalars)
    }
}
#endif
