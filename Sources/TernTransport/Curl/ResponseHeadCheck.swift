#if os(Linux)
/// What makes a response head one no answer should be read from, beyond what libcurl 7.88
/// refuses itself: framing a server could use to smuggle a second response into the body of
/// the first, or to make the client read a body of the wrong length (RFC 9112, section 6).
enum ResponseHeadCheck {
    /// Why the head with these fields (each with its name lower-cased) cannot be trusted, or
    /// `nil` when it can.
    static func problem(with fields: [(name: String, key: String, value: String)]) -> String? {
        let lengths = fields.filter { $0.key == "content-length" }.flatMap { $0.value.split(separator: ",", omittingEmptySubsequences: false) }
        if !lengths.isEmpty {
            // 1*DIGIT, every one the same: no sign, no hex, no list of others, nothing past Int64.
            let values = lengths.map { $0.trimmingCharacters(in: [" ", "\t"]) }
            guard values.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { (0x30...0x39).contains($0) } && Int64($0) != nil }),
                  Set(values.map { Int64($0) }).count == 1 else {
                return "its Content-Length is not one length (\(values.joined(separator: ", ")))"
            }
            if fields.contains(where: { $0.key == "transfer-encoding" }) {
                return "it has both Content-Length and Transfer-Encoding"
            }
        }
        let locations = Set(fields.filter { $0.key == "location" }.map(\.value))
        if locations.count > 1 { return "it has \(locations.count) different Location fields" }
        return nil
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
#endif
