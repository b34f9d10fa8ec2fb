/// What Tern checks of a URL string before it parses it, read byte by byte: this runs for every
/// request, and asking a parsed `URL` for its scheme and host builds strings each time.
package enum AbsoluteURL {
    /// Whether `string` starts with a URI scheme followed by "://" (RFC 3986 §3.1): a letter,
    /// then letters, digits, "+", "-" or ".".
    package static func hasScheme(_ string: String) -> Bool {
        string.withUTF8Bytes { authority(in: $0) != nil }
    }

    /// Whether `string` has a scheme, a non-empty host and no port but one from 0 to 65535:
    /// `https://x.io/a` and `http://x:8080` do; `http:///a`, `http://:80`, `http://x:99999`
    /// and `mailto:x` do not. (Foundation parses a port out of range, and the transport then
    /// fails as if the network had.)
    package static func hasSchemeAndHost(_ string: String) -> Bool {
        string.withUTF8Bytes { bytes in
            guard var authority = authority(in: bytes) else { return false }
            if let at = authority.last(where: { bytes[$0] == UInt8(ascii: "@") }) {
                authority = (at + 1)..<authority.upperBound
            }
            guard let first = authority.first, bytes[first] != UInt8(ascii: ":") else { return false }
            // An IPv6 literal is bracketed, and its colons are not the port's.
            var rest = authority
            if bytes[first] == UInt8(ascii: "[") {
                guard let close = authority.first(where: { bytes[$0] == UInt8(ascii: "]") }), close > first + 1 else { return false }
                rest = (close + 1)..<authority.upperBound
                guard rest.isEmpty || bytes[rest.lowerBound] == UInt8(ascii: ":") else { return false }
            }
            guard let colon = rest.first(where: { bytes[$0] == UInt8(ascii: ":") }) else { return true }
            return isPort(bytes[(colon + 1)..<authority.upperBound])
        }
    }

    /// Whether `string` starts with `http://` or `https://`, in any case: the only schemes Tern
    /// sends. (libcurl is told no others, but FoundationNetworking speaks FTP: a route read from
    /// data as `ftp://host` opened an FTP session there.)
    package static func hasHTTPScheme(_ string: String) -> Bool {
        string.withUTF8Bytes { bytes in
            let http = "http".utf8
            guard bytes.count > http.count, zip(bytes, http).allSatisfy({ $0 | 0x20 == $1 }) else { return false }
            let rest = bytes[http.count...]
            return rest.starts(with: "://".utf8) || (rest.first.map { $0 | 0x20 } == UInt8(ascii: "s") && rest.dropFirst().starts(with: "://".utf8))
        }
    }

    /// `string` with its scheme in lowercase (`HTTP://x` becomes `http://x`): schemes are
    /// case-insensitive (RFC 3986 §3.1), and libcurl takes any case where FoundationNetworking
    /// refuses all but lowercase. A string already in lowercase, or with no scheme, comes back as it is.
    package static func lowercasingScheme(_ string: String) -> String {
        let schemeEnd = string.utf8.firstIndex(of: UInt8(ascii: ":")) ?? string.utf8.startIndex
        guard string.utf8[..<schemeEnd].contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }),
              hasScheme(string) else { return string }
        return string[..<schemeEnd].lowercased() + string[schemeEnd...]
    }

    /// Whether the digits after a host's colon make a port: none (the scheme's default), or a
    /// decimal number up to 65535.
    private static func isPort(_ digits: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        var port = 0
        for digit in digits {
            guard digit.isASCIIDigit else { return false }
            port = port * 10 + Int(digit - UInt8(ascii: "0"))
            guard port <= 65535 else { return false }
        }
        return true
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
