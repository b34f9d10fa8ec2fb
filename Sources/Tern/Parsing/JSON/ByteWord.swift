/// Eight bytes of a string read as one word, to pass over runs of plain bytes eight at a time
/// and find the first byte that is not plain without looking at each.
enum ByteWord {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// The word of the eight bytes at `offset`, the first in the lowest byte whatever the
    /// machine's byte order.
    @inline(__always)
    static func load(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// Whether the `count` bytes at `a` and `b` are equal: words compared, the last ones
    /// overlapping, where a call to `memcmp` per member name cost more than the names' bytes.
    @inline(__always)
    static func equal(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
        if count >= 8 {
            var offset = 0
            while offset &+ 8 < count {
                guard a.loadUnaligned(fromByteOffset: offset, as: UInt64.self) == b.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                else { return false }
                offset &+= 8
            }
            return a.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self) == b.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
        }
        if count >= 4 {
            return a.loadUnaligned(as: UInt32.self) == b.loadUnaligned(as: UInt32.self)
                && a.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self) == b.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self)
        }
        if count >= 2 {
            return a.loadUnaligned(as: UInt16.self) == b.loadUnaligned(as: UInt16.self)
                && a.loadUnaligned(fromByteOffset: count &- 2, as: UInt16.self) == b.loadUnaligned(fromByteOffset: count &- 2, as: UInt16.self)
        }
        return count == 0 || a.load(as: UInt8.self) == b.load(as: UInt8.self)
    }

    /// The high bit of each byte of `word` a string's scanner must look at (a quote, a
    /// backslash, a control character, a byte past ASCII), and maybe of bytes after it: the
    /// lowest bit set is exact (borrows only run upwards), so `trailingZeroBitCount / 8` is the
    /// offset of the first such byte; zero when there is none.
    @inline(__always)
    static func special(_ word: UInt64) -> UInt64 {
        (word | below(0x20, word) | below(1, word ^ ones &* 0x22) | below(1, word ^ ones &* 0x5C)) & highs
    }

    /// Like ``special(_:)``, for backslashes alone.
    @inline(__always)
    static func backslashes(_ word: UInt64) -> UInt64 {
        below(1, word ^ ones &* 0x5C) & highs
    }

    /// The high bit of each byte below `limit` (at most 128), exact for the lowest.
    @inline(__always)
    private static func below(_ limit: UInt64, _ word: UInt64) -> UInt64 {
        (word &- ones &* limit) & ~word
    }
}
