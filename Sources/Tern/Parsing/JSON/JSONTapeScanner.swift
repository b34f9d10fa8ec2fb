import Foundation

/// Reads a document into a tape's values in one pass, checking it against RFC 8259 as it goes.
struct JSONTapeScanner {
    private let bytes: UnsafeRawBufferPointer
    private var position = 0
    private var values: [JSONTape.Value] = []

    /// `JSONDecoder`'s own nesting limit: deeper documents are its to refuse.
    static let maximumDepth = 512

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        // A guess that fits typical bodies at once, capped: a huge document of one string
        // should not reserve room for millions of values.
        values.reserveCapacity(min(bytes.count / 6, 1 << 16) + 2)
    }

    /// The document's values and a null after them, or `nil` when the document is not
    /// strict UTF-8 JSON.
    mutating func scan() -> [JSONTape.Value]? {
        do throws(Refusal) {
            try document()
            skipWhitespace()
            guard position == bytes.count else { return nil }
        } catch {
            return nil
        }
        values.append(JSONTape.Value(kind: .null, traits: 0, first: 0, last: 0))
        return values
    }

    private struct Refusal: Error {}

    /// A container whose contents are being read.
    private struct Open {
        /// Its index in the values.
        let index: Int
        let isObject: Bool
        /// Its members or elements so far.
        var count: UInt32 = 0
        /// For an object, whether every key so far is plain ASCII.
        var traits = JSONTape.plainASCIIKeys
    }

    /// One value at the top, read without recursion: a hostile document's nesting costs a
    /// list entry per level, never a stack frame.
    private mutating func document() throws(Refusal) {
        var open: [Open] = []
        nextValue: while true {
            skipWhitespace()
            switch byte(at: position) {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard open.count < Self.maximumDepth else { throw Refusal() }
                let isObject = bytes[position] == UInt8(ascii: "{")
                open.append(Open(index: values.count, isObject: isObject))
                values.append(JSONTape.Value(kind: isObject ? .object : .array, traits: 0, first: 0, last: 0))
                position += 1
                skipWhitespace()
                if byte(at: position) == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    position += 1
                    close(open.removeLast())
                } else {
                    if isObject { try key(of: &open[open.count - 1]) }
                    continue nextValue
                }
            case UInt8(ascii: "\""): try string()
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
            case UInt8(ascii: "t"): try literal("true", .true)
            case UInt8(ascii: "f"): try literal("false", .false)
            case UInt8(ascii: "n"): try literal("null", .null)
            default: throw Refusal()
            }
            // A value has ended: it was the document, or one more in the innermost container.
            while !open.isEmpty {
                open[open.count - 1].count += 1
                skipWhitespace()
                let separator = byte(at: position)
                position += 1
                if separator == UInt8(ascii: ",") {
                    if open[open.count - 1].isObject { try key(of: &open[open.count - 1]) }
                    continue nextValue
                }
                guard separator == (open[open.count - 1].isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else { throw Refusal() }
                close(open.removeLast())
            }
            return
        }
    }

    /// A member's key and its colon.
    private mutating func key(of object: inout Open) throws(Refusal) {
        skipWhitespace()
        guard byte(at: position) == UInt8(ascii: "\"") else { throw Refusal() }
        try string()
        if values[values.count - 1].traits != JSONTape.plain | JSONTape.ascii { object.traits = 0 }
        skipWhitespace()
        guard byte(at: position) == UInt8(ascii: ":") else { throw Refusal() }
        position += 1
    }

    private mutating func close(_ container: Open) {
        values[container.index] = JSONTape.Value(kind: container.isObject ? .object : .array, traits: container.isObject ? container.traits : 0,
                                                 first: container.count, last: UInt32(values.count))
    }

    @inline(__always)
    private func byte(at index: Int) -> UInt8 {
        index < bytes.count ? bytes[index] : 0
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): position += 1
            default: return
            }
        }
    }

    private mutating func literal(_ word: StaticString, _ kind: JSONTape.Kind) throws(Refusal) {
        let length = word.utf8CodeUnitCount
        guard position + length <= bytes.count,
              memcmp(bytes.baseAddress! + position, word.utf8Start, length) == 0 else { throw Refusal() }
        position += length
        values.append(JSONTape.Value(kind: kind, traits: 0, first: 0, last: 0))
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private mutating func number() throws(Refusal) {
        let start = position
        var traits = JSONTape.integral
        if byte(at: position) == UInt8(ascii: "-") { position += 1 }
        switch byte(at: position) {
        case UInt8(ascii: "0"): position += 1
        case UInt8(ascii: "1")...UInt8(ascii: "9"): skipDigits()
        default: throw Refusal()
        }
        if byte(at: position) == UInt8(ascii: ".") {
            traits = 0
            position += 1
            guard isDigit(byte(at: position)) else { throw Refusal() }
            skipDigits()
        }
        if byte(at: position) | 0x20 == UInt8(ascii: "e") {
            traits = 0
            position += 1
            if byte(at: position) == UInt8(ascii: "+") || byte(at: position) == UInt8(ascii: "-") { position += 1 }
            guard isDigit(byte(at: position)) else { throw Refusal() }
            skipDigits()
        }
        values.append(JSONTape.Value(kind: .number, traits: traits, first: UInt32(start), last: UInt32(position)))
    }

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    @inline(__always)
    private mutating func skipDigits() {
        while isDigit(byte(at: position)) { position += 1 }
    }

    /// A string, its escapes and UTF-8 checked: control characters, lone surrogates and
    /// malformed UTF-8 are refused.
    private mutating func string() throws(Refusal) {
        position += 1
        let start = position
        var traits = JSONTape.plain | JSONTape.ascii
        while true {
            // Eight bytes at a time to the next byte that needs a look; the last few one by one.
            var byte: UInt8
            if position + 8 <= bytes.count {
                let special = ByteWord.special(ByteWord.load(bytes, at: position))
                guard special != 0 else { position += 8; continue }
                position += special.trailingZeroBitCount >> 3
                byte = bytes[position]
            } else {
                guard position < bytes.count else { throw Refusal() }
                byte = bytes[position]
                if byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") { position += 1; continue }
            }
            if byte == UInt8(ascii: "\"") { break }
            if byte == UInt8(ascii: "\\") {
                traits &= ~JSONTape.plain
                // The escapes of one character (`\/` in every URL of some servers) need no call.
                switch position + 1 < bytes.count ? bytes[position + 1] : 0 {
                case UInt8(ascii: "/"), UInt8(ascii: "\\"), UInt8(ascii: "\""), UInt8(ascii: "n"): position += 2
                default: try escape()
                }
            } else if byte < 0x20 {
                throw Refusal()
            } else {
                traits &= ~JSONTape.ascii
                try multibyte()
            }
        }
        values.append(JSONTape.Value(kind: .string, traits: traits, first: UInt32(start), last: UInt32(position)))
        position += 1
    }

    private mutating func escape() throws(Refusal) {
        position += 1
        switch byte(at: position) {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
             UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            position += 1
        case UInt8(ascii: "u"):
            let unit = try hexUnit(at: position + 1)
            position += 5
            if unit & 0xFC00 == 0xDC00 { throw Refusal() }
            if unit & 0xFC00 == 0xD800 {
                guard byte(at: position) == UInt8(ascii: "\\"), byte(at: position + 1) == UInt8(ascii: "u"),
                      try hexUnit(at: position + 2) & 0xFC00 == 0xDC00 else { throw Refusal() }
                position += 6
            }
        default:
            throw Refusal()
        }
    }

    private func hexUnit(at start: Int) throws(Refusal) -> UInt16 {
        guard start + 4 <= bytes.count else { throw Refusal() }
        var unit: UInt16 = 0
        for index in start..<start + 4 {
            guard let digit = JSONTapeScanner.hexValue(bytes[index]) else { throw Refusal() }
            unit = unit << 4 | UInt16(digit)
        }
        return unit
    }

    /// The value of a hexadecimal digit.
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// One well-formed UTF-8 sequence of two to four bytes (Unicode's table 3-7).
    private mutating func multibyte() throws(Refusal) {
        let lead = bytes[position]
        let (length, low, high): (Int, UInt8, UInt8) = switch lead {
        case 0xC2...0xDF: (2, 0x80, 0xBF)
        case 0xE0: (3, 0xA0, 0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (3, 0x80, 0xBF)
        case 0xED: (3, 0x80, 0x9F)
        case 0xF0: (4, 0x90, 0xBF)
        case 0xF1...0xF3: (4, 0x80, 0xBF)
        case 0xF4: (4, 0x80, 0x8F)
        default: throw Refusal()
        }
        guard position + length <= bytes.count, (low...high).contains(bytes[position + 1]) else { throw Refusal() }
        for index in position + 2 ..< position + length where bytes[index] & 0xC0 != 0x80 { throw Refusal() }
        position += length
    }
}
