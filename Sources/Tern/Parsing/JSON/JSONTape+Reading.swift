import Foundation

/// A tape's values read as Swift values, each as `JSONDecoder` reads it. A value of another kind
/// throws `JSONDecoder`'s own error, at `path` (made only then; see `JSONTape+Mismatch.swift`);
/// one of the right kind that it would read otherwise, or refuse, fails the document so that
/// `JSONDecoder` decides.
extension JSONTape {
    @inline(__always)
    func isNull(_ index: Int) -> Bool { values[index].kind == .null }

    func bool(at index: Int, path: @autoclosure () -> [any CodingKey]) throws(TapeFailure) -> Bool {
        switch values[index].kind {
        case .true: return true
        case .false: return false
        default: throw mismatch(Bool.self, at: index, path: path())
        }
    }

    func string(at index: Int, path: @autoclosure () -> [any CodingKey]) throws(TapeFailure) -> String {
        let value = values[index]
        guard value.kind == .string else { throw mismatch(String.self, at: index, path: path()) }
        let bytes = span(of: value)
        return value.traits & JSONTape.plain != 0 ? String(decoding: bytes, as: UTF8.self) : Self.unescaped(bytes)
    }

    /// An integer written without fraction or exponent that fits `T`; `JSONDecoder` takes the
    /// rest (`1.0`, `1e3`, `-0`) by ways of its own. Inlined, so that each caller reads its own
    /// type: called generically, each digit went through `FixedWidthInteger`'s witnesses, a cost
    /// every integer member paid per digit.
    @inline(__always)
    func integer<T: FixedWidthInteger>(at index: Int, as type: T.Type, path: @autoclosure () -> [any CodingKey]) throws(TapeFailure) -> T {
        let value = values[index]
        guard value.kind == .number else { throw mismatch(T.self, at: index, path: path()) }
        guard value.traits & JSONTape.integral != 0 else { throw fail() }
        let bytes = span(of: value)
        let negative = bytes[0] == UInt8(ascii: "-")
        var result: T = 0
        for byte in bytes.dropFirst(negative ? 1 : 0) {
            let digit = T(truncatingIfNeeded: byte &- UInt8(ascii: "0"))
            let (shifted, overflowed) = result.multipliedReportingOverflow(by: 10)
            let (next, carried) = negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            guard !overflowed, !carried else { throw fail() }
            result = next
        }
        guard !negative || result != 0 else { throw fail() }
        return result
    }

    func double(at index: Int, path: @autoclosure () -> [any CodingKey]) throws(TapeFailure) -> Double {
        let value = values[index]
        guard value.kind == .number else { throw mismatch(Double.self, at: index, path: path()) }
        let bytes = span(of: value)
        if let exact = Self.exactDouble(bytes) { return exact }
        return try checked(Double(String(decoding: bytes, as: UTF8.self)), from: bytes)
    }

    func float(at index: Int, path: @autoclosure () -> [any CodingKey]) throws(TapeFailure) -> Float {
        let value = values[index]
        guard value.kind == .number else { throw mismatch(Float.self, at: index, path: path()) }
        let bytes = span(of: value)
        return try checked(Float(String(decoding: bytes, as: UTF8.self)), from: bytes)
    }

    /// A number without exponent, through the parser `JSONDecoder` uses for decimals (which
    /// `Decimal(string:)` calls too); numbers with an exponent are left to it.
    func decimal(at index: Int) throws(TapeFailure) -> Decimal {
        let value = values[index]
        guard value.kind == .number else { throw fail() }
        let bytes = span(of: value)
        guard !bytes.contains(where: { $0 | 0x20 == UInt8(ascii: "e") }),
              let decimal = Decimal(string: String(decoding: bytes, as: UTF8.self)) else { throw fail() }
        return decimal
    }

    /// A parsed floating-point number, refused as `JSONDecoder` refuses it: infinite, or zero
    /// where ``isTrueZero(_:)`` says the digits were not.
    private func checked<F: BinaryFloatingPoint>(_ parsed: F?, from bytes: UnsafeRawBufferPointer) throws(TapeFailure) -> F {
        guard let parsed, parsed.isFinite, parsed != 0 || Self.isTrueZero(bytes) else { throw fail() }
        return parsed
    }

    /// `JSONDecoder`'s test of whether a number that parsed as zero was written as zero, in its
    /// own order: four bytes at a time from the start, then the last one to three bytes from the
    /// end backwards, stopping at the first nonzero digit (not zero) or exponent letter (zero). So
    /// it refuses `0e6` and takes `0e-1`; the tape refuses exactly what it refuses.
    static func isTrueZero(_ bytes: UnsafeRawBufferPointer) -> Bool {
        func verdict(_ byte: UInt8) -> Bool? {
            switch byte {
            case UInt8(ascii: "1")...UInt8(ascii: "9"): false
            case UInt8(ascii: "e"), UInt8(ascii: "E"): true
            default: nil
            }
        }
        let blocks = bytes.count / 4 * 4
        for byte in bytes[..<blocks] {
            if let verdict = verdict(byte) { return verdict }
        }
        for byte in bytes[blocks...].reversed() {
            if let verdict = verdict(byte) { return verdict }
        }
        return true
    }

    /// Powers of ten that a `Double` holds exactly.
    private static let exactPowersOfTen: [Double] = (0...22).map { exponent in
        (0..<exponent).reduce(1.0) { power, _ in power * 10 }
    }

    /// A decimal without exponent of at most 15 digits (so below 2^53), at most 22 after the point:
    /// one correctly rounded division of two exact doubles gives the nearest double, as
    /// `strtod` would (Clinger's fast path).
    private static func exactDouble(_ bytes: UnsafeRawBufferPointer) -> Double? {
        guard bytes.count <= 17 else { return nil }
        var mantissa: Int64 = 0
        var digits = 0
        var fractionDigits = 0
        var inFraction = false
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                mantissa = mantissa * 10 + Int64(byte &- UInt8(ascii: "0"))
                digits += 1
                if inFraction { fractionDigits += 1 }
            case UInt8(ascii: "."): inFraction = true
            case UInt8(ascii: "-"): continue
            default: return nil
            }
        }
        guard digits <= 15 else { return nil }
        let magnitude = Double(mantissa) / exactPowersOfTen[fractionDigits]
        return bytes[0] == UInt8(ascii: "-") ? -magnitude : magnitude
    }

    /// A string's text with its escapes undone (the scanner has checked every escape, and paired
    /// every surrogate), written straight into the string's own storage: no escape lengthens its
    /// text (`\uXXXX` is at most three bytes of UTF-8, a surrogate pair's twelve four), so the
    /// escaped length is room enough.
    private static func unescaped(_ bytes: UnsafeRawBufferPointer) -> String {
        guard #available(macOS 11.0, iOS 14.0, tvOS 14.0, watchOS 7.0, *) else {
            // Not reached: on Apple platforms the tape leaves every document to JSONDecoder.
            return String(decoding: bytes, as: UTF8.self)
        }
        return String(unsafeUninitializedCapacity: bytes.count) { text in
            var index = 0, count = 0
            let output = UnsafeMutableRawBufferPointer(text)
            while index < bytes.count {
                // Eight bytes at a time up to the next backslash: the word is stored whole (the
                // bytes past the backslash are written over next; the escaped length leaves room),
                // and only the bytes before it are counted.
                if index + 8 <= bytes.count {
                    let word = ByteWord.load(bytes, at: index)
                    output.storeBytes(of: word.littleEndian, toByteOffset: count, as: UInt64.self)
                    let backslashes = ByteWord.backslashes(word)
                    guard backslashes != 0 else { index += 8; count += 8; continue }
                    index += backslashes.trailingZeroBitCount >> 3
                    count += backslashes.trailingZeroBitCount >> 3
                } else if bytes[index] != UInt8(ascii: "\\") {
                    text[count] = bytes[index]
                    count += 1
                    index += 1
                    continue
                }
                let escaped = bytes[index + 1]
                index += 2
                switch escaped {
                case UInt8(ascii: "b"): text[count] = 0x08; count += 1
                case UInt8(ascii: "f"): text[count] = 0x0C; count += 1
                case UInt8(ascii: "n"): text[count] = 0x0A; count += 1
                case UInt8(ascii: "r"): text[count] = 0x0D; count += 1
                case UInt8(ascii: "t"): text[count] = 0x09; count += 1
                case UInt8(ascii: "u"):
                    var scalar = UInt32(hexUnit(bytes, at: index))
                    index += 4
                    if scalar & 0xFC00 == 0xD800 {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (UInt32(hexUnit(bytes, at: index + 2)) - 0xDC00)
                        index += 6
                    }
                    writeUTF8(of: scalar, to: text, at: &count)
                default: text[count] = escaped; count += 1
                }
            }
            return count
        }
    }

    private static func hexUnit(_ bytes: UnsafeRawBufferPointer, at start: Int) -> UInt16 {
        bytes[start..<start + 4].reduce(0) { unit, byte in unit << 4 | UInt16(JSONTapeScanner.hexValue(byte) ?? 0) }
    }

    private static func writeUTF8(of scalar: UInt32, to text: UnsafeMutableBufferPointer<UInt8>, at count: inout Int) {
        switch scalar {
        case ..<0x80:
            text[count] = UInt8(scalar)
            count += 1
        case ..<0x800:
            text[count] = 0xC0 | UInt8(scalar >> 6)
            text[count + 1] = 0x80 | UInt8(scalar & 0x3F)
            count += 2
        case ..<0x10000:
            text[count] = 0xE0 | UInt8(scalar >> 12)
            text[count + 1] = 0x80 | UInt8(scalar >> 6 & 0x3F)
            text[count + 2] = 0x80 | UInt8(scalar & 0x3F)
            count += 3
        default:
            text[count] = 0xF0 | UInt8(scalar >> 18)
            text[count + 1] = 0x80 | UInt8(scalar >> 12 & 0x3F)
            text[count + 2] = 0x80 | UInt8(scalar >> 6 & 0x3F)
            text[count + 3] = 0x80 | UInt8(scalar & 0x3F)
            count += 4
        }
    }
}
