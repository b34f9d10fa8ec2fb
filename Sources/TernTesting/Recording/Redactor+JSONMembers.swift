import Foundation

/// Named members found in text by JSON's grammar, a token at a time, their values hidden in
/// place and every other byte kept as it came: for a body that `JSONSerialization` refuses
/// whole, which a lenient reader (Tern's own parser) may still read (a lone surrogate's escape,
/// a number past `Double`'s range), and for JSON inside other text (newline-delimited values,
/// an event stream's `data:` lines).
extension Redactor {
    private static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\"), colon = UInt8(ascii: ":")

    /// `text` with the value of every member whose name is a secret's written as the
    /// placeholder, and remembered.
    mutating func redactJSONMembers(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var result: [UInt8] = [], copied = 0, index = 0
        while index < bytes.count {
            guard bytes[index] == Self.quote else { index += 1; continue }
            let (close, closed) = Self.stringEnd(bytes, from: index)
            guard closed else { index = close; continue }
            var next = Self.skipSpace(bytes, from: close + 1)
            guard next < bytes.count, bytes[next] == Self.colon else { index = close + 1; continue }
            let name = Self.unescaped(bytes[index + 1 ..< close])
            next = Self.skipSpace(bytes, from: next + 1)
            guard names.contains(name.lowercased()), next < bytes.count, let end = Self.valueEnd(bytes, from: next) else {
                index = next
                continue
            }
            let value = bytes[next..<end]
            if value.first == Self.quote {
                remember(Self.unescaped(value.dropFirst().dropLast()))
            } else if value.first != UInt8(ascii: "{") && value.first != UInt8(ascii: "[") {
                remember(String(decoding: value, as: UTF8.self))
            }
            result += bytes[copied..<next]
            result += Array("\"\(Self.placeholder)\"".utf8)
            copied = end
            index = end
        }
        guard copied > 0 else { return text }
        result += bytes[copied...]
        return String(decoding: result, as: UTF8.self)
    }

    /// The index of the quote that closes the string opened at `open`, and whether one does
    /// before the line ends (else the index of the line break or the end).
    private static func stringEnd(_ bytes: [UInt8], from open: Int) -> (Int, Bool) {
        var index = open + 1
        while index < bytes.count {
            switch bytes[index] {
            case backslash: index += 2
            case quote: return (index, true)
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"): return (index, false)
            default: index += 1
            }
        }
        return (bytes.count, false)
    }

    private static func skipSpace(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        return index
    }

    /// Where the value that starts at `start` ends: a string at its closing quote, an object or
    /// array at its closing bracket (at the text's end when none comes: a body cut short is
    /// hidden to its end), anything else at a comma, a closing bracket or a space.
    private static func valueEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        switch bytes[start] {
        case quote:
            let (close, closed) = stringEnd(bytes, from: start)
            return closed ? close + 1 : nil
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0, index = start
            while index < bytes.count {
                switch bytes[index] {
                case quote:
                    let (close, closed) = stringEnd(bytes, from: index)
                    guard closed else { return bytes.count }
                    index = close
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return index + 1 }
                default: break
                }
                index += 1
            }
            return bytes.count
        default:
            var index = start
            while index < bytes.count, !",}] \t\r\n".utf8.contains(bytes[index]) { index += 1 }
            return index > start ? index : nil
        }
    }

    /// A string token's content with its escapes read (`\u0077` is `w`; a lone surrogate, which
    /// no `String` holds, is U+FFFD).
    private static func unescaped(_ content: ArraySlice<UInt8>) -> String {
        guard content.contains(backslash) else { return String(decoding: content, as: UTF8.self) }
        var text = "", run: [UInt8] = [], index = content.startIndex
        while index < content.endIndex {
            guard content[index] == backslash, index + 1 < content.endIndex else {
                run.append(content[index])
                index += 1
                continue
            }
            text += String(decoding: run, as: UTF8.self)
            run = []
            let escape = content[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "u"):
                let hex = content[index..<min(index + 4, content.endIndex)]
                let scalar = UInt32(String(decoding: hex, as: UTF8.self), radix: 16).flatMap(Unicode.Scalar.init) ?? "\u{FFFD}"
                text.unicodeScalars.append(scalar)
                index = hex.endIndex
            case UInt8(ascii: "n"): text += "\n"
            case UInt8(ascii: "r"): text += "\r"
            case UInt8(ascii: "t"): text += "\t"
            case UInt8(ascii: "b"): text += "\u{8}"
            case UInt8(ascii: "f"): text += "\u{C}"
            default: run.append(escape)
            }
        }
        return text + String(decoding: run, as: UTF8.self)
    }
}
