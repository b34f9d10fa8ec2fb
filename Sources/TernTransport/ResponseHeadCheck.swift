import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What makes a response head one no answer should be read from, beyond what libcurl 7.88
/// refuses itself: framing a server could use to smuggle a second response into the body of
/// the first, or to make the client read a body of the wrong length (RFC 9112, section 6).
/// Checked over libcurl and over FoundationNetworking, which reads such a body as its libcurl
/// picks.
enum ResponseHeadCheck {
    /// The error a response refused for `problem` ends its request with.
    static func refusal(_ problem: String, url: URL?) -> URLError {
        var info: [String: Any] = [NSLocalizedDescriptionKey: "the response cannot be trusted: \(problem)"]
        if let url { info[NSURLErrorFailingURLErrorKey] = url }
        return URLError(.badServerResponse, userInfo: info)
    }

    /// Why a 101 is refused: the connection now speaks another protocol, which no request of
    /// Tern's asks for.
    static let switchedProtocols = "it switched to another protocol (101), which no request asked for"

    /// Why `response`, as Foundation read it (its repeated fields joined with commas), cannot be
    /// trusted, or `nil` when it can.
    static func problem(with response: HTTPURLResponse) -> String? {
        guard response.statusCode != 101 else { return switchedProtocols }
        // Two Location fields arrive as one, joined with ", ", which no URL holds (a space is
        // no character of a URI): the redirect would go to neither.
        if let location = response.value(forHTTPHeaderField: "Location"), location.contains(", ") {
            return "its Location is not one URL (\(location.prefix(200)))"
        }
        return problem(with: response.allHeaderFields.compactMap { name, value in
            (name as? String).map { (name: $0, value: "\(value)") }
        })
    }

    /// Why the head with these fields cannot be trusted, or `nil` when it can; `httpVersion`,
    /// where it is known, as its status line gave it.
    static func problem(with fields: [(name: String, value: String)], httpVersion: String? = nil) -> String? {
        var lengthFields: [String] = []
        var codings: [String] = []
        var hasTransferEncoding = false
        var location: String?
        var locations = 1
        for field in fields {
            // RFC 9112 allows no whitespace before the colon, and clients differ on such a name:
            // libcurl takes it for another field (and would read the body to the connection's
            // end), browsers trim it. Refused where it would frame the body.
            if let last = field.name.utf8.last, last == 0x20 || last == 0x09 {
                let name = field.name.trimmingCharacters(in: .whitespaces)
                if name.caseInsensitiveEquals("content-length") || name.caseInsensitiveEquals("transfer-encoding") {
                    return "its \(name) field has whitespace before its colon"
                }
            }
            if field.name.caseInsensitiveEquals("content-length") {
                lengthFields.append(field.value)
            } else if field.name.caseInsensitiveEquals("transfer-encoding") {
                hasTransferEncoding = true
                codings += field.value.split(separator: ",").map { String(trimmed($0)) }.filter { !$0.isEmpty }
            } else if field.name.caseInsensitiveEquals("location") {
                if let location, location != field.value { locations += 1 }
                location = location ?? field.value
            }
        }
        if !lengthFields.isEmpty {
            guard oneLength(lengthFields) != nil else {
                let values = lengthFields.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }.map(trimmed)
                return "its Content-Length is not one length (\(values.joined(separator: ", ")))"
            }
            if hasTransferEncoding { return "it has both Content-Length and Transfer-Encoding" }
        }
        if hasTransferEncoding, let problem = problem(withCodings: codings, httpVersion: httpVersion) { return problem }
        if locations > 1 {
            let different = Set(fields.filter { $0.name.caseInsensitiveEquals("location") }.map(\.value))
            if different.count > 1 { return "it has \(different.count) different Location fields" }
        }
        return nil
    }

    /// Why a body sent with these transfer codings would be read two ways, or `nil` when it is
    /// read one way. RFC 9112 reads a body to the connection's close when its last coding is not
    /// `chunked`, or when it is HTTP/1.0, which has no transfer codings; libcurl decodes the
    /// chunks all the same, and leaves what follows them on the connection for the next answer.
    /// `chunked` twice has no reading at all.
    private static func problem(withCodings codings: [String], httpVersion: String?) -> String? {
        let named = "Transfer-Encoding: \(codings.joined(separator: ", ").prefix(200))"
        if httpVersion == "HTTP/1.0" { return "it is HTTP/1.0, which has no transfer codings, and has a \(named)" }
        let chunked = codings.filter { coding in
            coding.split(separator: ";").first.map { String(trimmed($0)).caseInsensitiveEquals("chunked") } == true
        }
        if chunked.count > 1 { return "it is chunked more than once (\(named))" }
        // No request asks for another (TE), and no transport undoes one: a body in gzip would be
        // handed over compressed, taken for the answer.
        if let other = codings.lazy.compactMap({ $0.split(separator: ";").first.map { String(trimmed($0)) } })
            .first(where: { !$0.isEmpty && !$0.caseInsensitiveEquals("chunked") && !$0.caseInsensitiveEquals("identity") }) {
            return "it has a transfer coding no request asks for (\(other.prefix(40)))"
        }
        if !chunked.isEmpty, codings.last?.caseInsensitiveEquals("chunked") != true {
            return "its last transfer coding is not chunked, which it names (\(named))"
        }
        return nil
    }

    /// The one length `values` give, each a list of lengths with commas between; `nil` unless
    /// every length is 1*DIGIT (no sign, no hex, nothing past Int64), maybe between spaces and
    /// tabs, and all are the same. Read byte by byte: no string is made for a head that is sound.
    private static func oneLength(_ values: [String]) -> Int64? {
        var length: Int64?
        var number: Int64 = 0, digits = 0, trailing = false
        /// Ends one length: whether it is one, and the same as those before.
        func endLength() -> Bool {
            guard digits > 0, length == nil || length == number else { return false }
            (length, number, digits, trailing) = (number, 0, 0, false)
            return true
        }
        for value in values {
            for byte in value.utf8 {
                switch byte {
                case UInt8(ascii: ","):
                    guard endLength() else { return nil }
                case 0x20, 0x09:
                    trailing = digits > 0
                case 0x30...0x39 where !trailing:
                    let (times, overflowed) = number.multipliedReportingOverflow(by: 10)
                    let (sum, overflowedAgain) = times.addingReportingOverflow(Int64(byte - 0x30))
                    guard !overflowed, !overflowedAgain else { return nil }
                    (number, digits) = (sum, digits + 1)
                default:
                    return nil
                }
            }
            guard endLength() else { return nil }
        }
        return length
    }

    /// `value` without the spaces and tabs around it.
    private static func trimmed(_ value: Substring) -> Substring {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = value.firstIndex(where: { !blank($0) }), let end = value.lastIndex(where: { !blank($0) }) else { return "" }
        return value[start...end]
    }

    /// Whether `line` is an HTTP/1 status line: `HTTP/` (in capitals, as RFC 9112 says), a
    /// version of one digit, a dot and one digit, a space and three digits, then nothing or a
    /// space and the reason. An HTTP/2 head reaches Tern with `HTTP/2 200`.
    static func isStatusLine(_ line: some Collection<UInt8>) -> Bool {
        let bytes = Array(line.prefix(13))
        func isDigit(_ index: Int) -> Bool { index < bytes.count && (0x30...0x39).contains(bytes[index]) }
        guard bytes.starts(with: "HTTP/".utf8), isDigit(5) else { return false }
        let codeStart = bytes.count > 6 && bytes[6] == UInt8(ascii: ".") ? (isDigit(7) ? 9 : -1) : 7
        guard codeStart > 0, bytes.count > codeStart + 2, bytes[codeStart - 1] == UInt8(ascii: " "),
              isDigit(codeStart), isDigit(codeStart + 1), isDigit(codeStart + 2) else { return false }
        return bytes.count == codeStart + 3 || bytes[codeStart + 3] == UInt8(ascii: " ")
    }
}
