/// What Tern checks of a URL string before it parses it, read byte by byte: this runs for every
/// request, and asking a parsed `URL` for its scheme and host builds strings each time.
enum AbsoluteURL {
    /// Whether `string` starts with a URI scheme followed by "://" (RFC 3986 §3.1): a letter,
    /// then letters, digits, "+", "-" or ".".
    static func hasScheme(_ string: String) -> Bool {
        string.withUTF8Bytes { authority(in: $0) != nil }
    }

    /// Whether `string` has a scheme and a non-empty host: `https://x.io/a` does, `http:///a`,
    /// `http://:80` and `mailto:x` do not.
    static func hasSchemeAndHost(_ string: String) -> Bool {
        string.withUTF8Bytes { bytes in
            guard var authority = authority(in: bytes) else { return false }
            if let at = authority.last(where: { bytes[$0] == UInt8(ascii: "@") }) {
                authority = (at + 1)..<authority.upperBound
            }
            guard let first = authority.first else { return false }
            // An IPv6 literal is bracketed, and its colons are not the port's.
            if bytes[first] == UInt8(ascii: "[") { return authority.count > 2 }
            return bytes[first] != UInt8(ascii: ":")
        }
    }

    /// Where the bytes between "scheme://" and the first "/", "?" or "#" are; `nil` without a scheme.
    private static func authority(in bytes: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        guard let first = bytes.first, first.isASCIILetter else { return nil }
        var colon = 1
        while colon < bytes.count, bytes[colon] != UInt8(ascii: ":") {
            let byte = bytes[colon]
            guard byte.isASCIILetter || byte.isASCIIDigit || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") else {
                return nil
            }
            colon += 1
        }
        guard colon + 2 < bytes.count, bytes[colon + 1] == UInt8(ascii: "/"), bytes[colon + 2] == UInt8(ascii: "/") else {
            return nil
        }
        let start = colon + 3
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?"), bytes[end] != UInt8(ascii: "#") {
            end += 1
        }
        return start..<end
    }
}
