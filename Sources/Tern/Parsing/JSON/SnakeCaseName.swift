/// Names read from snake case as `JSONDecoder`'s `.convertFromSnakeCase` reads them, for the
/// names whose conversion is plain: ASCII words of lower-case letters, those after the first
/// ending in digits if at all, joined by single underscores (`html_url` is `htmlUrl`,
/// `sha256_sum` is `sha256Sum`). Any other name (capitals, leading, trailing or doubled
/// underscores, a later word that starts with a digit or has letters after its digits) is not
/// the tape's: `JSONDecoder` has rules of its own for them (`x_1st` is `x1St` there).
enum SnakeCaseName {
    /// Hands `emit` each byte of the converted name, in order, and returns whether the name is
    /// plain; when it is not, what was emitted means nothing.
    @inline(__always)
    static func convert(_ name: UnsafeRawBufferPointer, _ emit: (UInt8) -> Void) -> Bool {
        let underscore = UInt8(ascii: "_")
        guard let first = name.first, let last = name.last, first != underscore, last != underscore else { return false }
        var afterUnderscore = false, inLaterWord = false, sawDigit = false
        for byte in name {
            if byte == underscore {
                guard !afterUnderscore else { return false }
                afterUnderscore = true
                inLaterWord = true
                sawDigit = false
                continue
            }
            let isLetter = byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")
            let isDigit = byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
            guard isLetter || isDigit else { return false }
            if afterUnderscore {
                guard isLetter else { return false }
                emit(byte - 32)   // upper case
                afterUnderscore = false
                continue
            }
            if inLaterWord {
                if isDigit { sawDigit = true } else if sawDigit { return false }
            }
            emit(byte)
        }
        return true
    }

    /// The hash of the converted name, or `nil` when the name is not plain.
    @inline(__always)
    static func hash(_ name: UnsafeRawBufferPointer) -> UInt64? {
        var hash = NameHash()
        return convert(name) { hash.add($0) } ? hash.value : nil
    }

    /// Whether the plain `name` converts to `wanted`.
    @inline(__always)
    static func converts(_ name: UnsafeRawBufferPointer, to wanted: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0, equal = true
        let plain = convert(name) { byte in
            if index < wanted.count, wanted[index] == byte { index += 1 } else { equal = false }
        }
        return plain && equal && index == wanted.count
    }

    /// A plain `name` as `.convertFromSnakeCase` reads it (`next_cursor` is `nextCursor`);
    /// `nil` when it is not plain or reads as it is written.
    static func converted(_ name: String) -> String? {
        var bytes: [UInt8] = []
        var name = name
        let plain = name.withUTF8 { convert(UnsafeRawBufferPointer($0)) { bytes.append($0) } }
        guard plain, bytes.count != name.utf8.count else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
