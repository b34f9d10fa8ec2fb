/// Eight bytes of a string read as one word, to pass over runs of plain bytes eight at a time.
/// Each test may say yes for a word that has none of what it looks for (a borrow from a lower
/// byte), never no for one that has: callers go byte by byte where it says yes.
enum ByteWord {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// The word of the eight bytes at `offset`.
    @inline(__always)
    static func load(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
    }

    /// Whether a byte of `word` may be below `limit` (at most 128).
    @inline(__always)
    static func mayHaveByte(below limit: UInt8, in word: UInt64) -> Bool {
        (word &- ones &* UInt64(limit)) & ~word & highs != 0
    }

    /// Whether a byte of `word` may be `byte`.
    @inline(__always)
    static func mayHave(_ byte: UInt8, in word: UInt64) -> Bool {
        mayHaveByte(below: 1, in: word ^ (ones &* UInt64(byte)))
    }

    /// Whether every byte of `word` is ASCII other than a quote, a backslash or a control
    /// character: nothing a JSON string's scanner need look at.
    @inline(__always)
    static func isPlainText(_ word: UInt64) -> Bool {
        word & highs == 0 && !mayHaveByte(below: 0x20, in: word)
            && !mayHave(UInt8(ascii: "\""), in: word) && !mayHave(UInt8(ascii: "\\"), in: word)
    }
}
