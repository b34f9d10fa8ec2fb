/// A `Content-Type` field read as RFC 9110 section 5.6 writes it: a quoted parameter value may
/// hold `;`, `,`, `=` and escaped quotes, which a plain split would take for the end of a
/// parameter or of a value.
package enum MediaTypeField {
    /// The value of the parameter `name` (compared without case) in `mediaType`, unquoted; `nil`
    /// when it has none. The first of several wins.
    package static func parameter(_ name: String, in mediaType: String) -> String? {
        for parameter in pieces(of: mediaType, between: UInt8(ascii: ";")).dropFirst() {
            guard let equals = parameter.firstIndex(of: UInt8(ascii: "=")),
                  trimmed(parameter[..<equals]).lowercased() == name.lowercased() else { continue }
            return unquoted(trimmed(parameter[parameter.index(after: equals)...]))
        }
        return nil
    }

    /// The media type of the field's last value, in lower case without its parameters
    /// (`text/event-stream`): of values listed or fields repeated, the last is the type, as
    /// browsers read it.
    package static func lastType(in field: String) -> String {
        let last = pieces(of: field, between: UInt8(ascii: ",")).last ?? field.utf8[...]
        return trimmed(pieces(of: String(Substring(last)), between: UInt8(ascii: ";")).first ?? last).lowercased()
    }

    /// `text` cut at each `separator` outside quotes.
    private static func pieces(of text: String, between separator: UInt8) -> [Substring.UTF8View] {
        let bytes = Substring(text).utf8
        var pieces: [Substring.UTF8View] = []
        var (start, index, isQuoted) = (bytes.startIndex, bytes.startIndex, false)
        while index < bytes.endIndex {
            let byte = bytes[index]
            if isQuoted, byte == UInt8(ascii: "\\") {
                index = bytes.index(after: index)   // the escaped byte, whatever it is
                if index == bytes.endIndex { break }
            } else if byte == UInt8(ascii: "\"") {
                isQuoted.toggle()
            } else if !isQuoted, byte == separator {
                pieces.append(bytes[start..<index])
                start = bytes.index(after: index)
            }
            index = bytes.index(after: index)
        }
        pieces.append(bytes[start...])
        return pieces
    }

    /// A value with its quotes taken off and its escapes undone; text after a closing quote is
    /// dropped, and a quote never closed runs to the end.
    private static func unquoted(_ value: String) -> String {
        guard value.utf8.first == UInt8(ascii: "\"") else { return value }
        var result: [UInt8] = []
        var bytes = value.utf8.dropFirst().makeIterator()
        while let byte = bytes.next(), byte != UInt8(ascii: "\"") {
            if byte == UInt8(ascii: "\\"), let escaped = bytes.next() { result.append(escaped) } else { result.append(byte) }
        }
        return String(decoding: result, as: UTF8.self)
    }

    private static func trimmed(_ bytes: Substring.UTF8View) -> String {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(Substring(bytes[first...last]))
    }
}
