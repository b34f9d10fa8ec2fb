/// What Tern checks of a URL string before it parses it, read byte by byte: this runs for every
/// request, and asking a parsed `URL` for its scheme and host builds strings each time.
enum AbsoluteURL {
    /// Whether `string` starts with a URI scheme followed by "://" (RFC 3986 §3.1): a letter,
    /// then letters, digits, "+", "-" or ".".
    static func hasScheme(_ string: String) -> Bool {
        authority(of: string) != nil
    }

    /// Whether `string` has a scheme and a non-empty host: `https://x.io/a` does, `http:///a`,
    /// `http://:80` and `mailto:x` do not.
    static func hasSchemeAndHost(_ string: String) -> Bool {
        guard var authority = authority(of: string) else { return false }
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = authority[authority.index(after: at)...] }
        // An IPv6 literal is bracketed, and its colons are not the port's.
        if authority.first == UInt8(ascii: "[") { return authority.count > 2 }
        guard let first = authority.first else { return false }
        return first != UInt8(ascii: ":")
    }

    /// The bytes between "scheme://" and the first "/", "?" or "#"; `nil` without a scheme.
    private static func authority(of string: String) -> Substring.UTF8View? {
        let bytes = Substring(string).utf8
        guard let first = bytes.first, first.isASCIILetter else { return nil }
        var index = bytes.index(after: bytes.startIndex)
        while index != bytes.endIndex, bytes[index] != UInt8(ascii: ":") {
            let byte = bytes[index]
            guard byte.isASCIILetter || byte.isASCIIDigit || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") else {
                return nil
            }
            index = bytes.index(after: index)
        }
        let rest = bytes[index...]
        guard rest.starts(with: "://".utf8) else { return nil }
        let authority = rest.dropFirst(3)
        let end = authority.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
        return authority[..<(end ?? authority.endIndex)]
    }
}

private extension UInt8 {
    var isASCIILetter: Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self | 0x20) }
    var isASCIIDigit: Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) }
}
