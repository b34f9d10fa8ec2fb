/// The parameters of a media type (`text/plain; charset=utf-8; title="a;b"`), read as RFC 9110
/// section 5.6.6 writes them: a quoted value may hold `;`, `=` and escaped quotes, which a plain
/// split on `;` would take for the start of another parameter.
package enum MediaTypeParameters {
    /// The value of the parameter `name` (compared without case) in `mediaType`, unquoted; `nil`
    /// when it has none. The first of several wins.
    package static func value(of name: String, in mediaType: String) -> String? {
        var bytes = Substring(mediaType).utf8[...]
        // The type and subtype, up to the first `;`: a token, with no quotes in it.
        guard let start = bytes.firstIndex(of: UInt8(ascii: ";")) else { return nil }
        bytes = bytes[bytes.index(after: start)...]
        while !bytes.isEmpty {
            let parameterName = take(&bytes, upTo: [UInt8(ascii: "="), UInt8(ascii: ";")])
            guard bytes.first == UInt8(ascii: "=") else {
                bytes = bytes.dropFirst()   // a `;` with no value before it: nothing to read
                continue
            }
            bytes = bytes.dropFirst().drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
            let value = bytes.first == UInt8(ascii: "\"") ? quoted(&bytes) : trimmed(take(&bytes, upTo: [UInt8(ascii: ";")]))
            if trimmed(parameterName).lowercased() == name.lowercased() { return value }
            // Past what follows a quoted value, to the next `;`.
            _ = take(&bytes, upTo: [UInt8(ascii: ";")])
            bytes = bytes.dropFirst()
        }
        return nil
    }

    /// The bytes of `bytes` before the first of `stops`, taken from it; the stop stays.
    private static func take(_ bytes: inout Substring.UTF8View.SubSequence, upTo stops: [UInt8]) -> String {
        let end = bytes.firstIndex { stops.contains($0) } ?? bytes.endIndex
        defer { bytes = bytes[end...] }
        return String(Substring(bytes[..<end]))
    }

    /// A quoted string at the start of `bytes`, its quotes taken off and its escapes undone,
    /// taken from it with its closing quote; one never closed runs to the end.
    private static func quoted(_ bytes: inout Substring.UTF8View.SubSequence) -> String {
        var value: [UInt8] = []
        var index = bytes.index(after: bytes.startIndex)
        while index < bytes.endIndex {
            let byte = bytes[index]
            index = bytes.index(after: index)
            if byte == UInt8(ascii: "\"") { break }
            if byte == UInt8(ascii: "\\"), index < bytes.endIndex {
                value.append(bytes[index])
                index = bytes.index(after: index)
            } else {
                value.append(byte)
            }
        }
        bytes = bytes[index...]
        return String(decoding: value, as: UTF8.self)
    }

    private static func trimmed(_ text: String) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
