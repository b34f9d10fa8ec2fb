/// A hash of a name's bytes, taken eight at a time: how a tape indexes the members of a large
/// object, and finds the member a key names.
///
/// Byte by byte (FNV-1a), each byte waited for the multiply before it, and hashing the names a
/// type's keys ask for weighed on decoding every object. Here bytes are gathered into a
/// word, which one multiply mixes in; a name of up to eight bytes costs two.
///
/// Bytes given one at a time (a name converted from snake case as it is read) hash as the same
/// bytes given at once.
struct NameHash {
    private var state = Self.seed
    /// The bytes since the last full word, the first in the lowest byte.
    private var word: UInt64 = 0
    private var count = 0

    private static var seed: UInt64 { 0xCBF2_9CE4_8422_2325 }

    @inline(__always)
    mutating func add(_ byte: UInt8) {
        word |= UInt64(byte) &<< UInt64(truncatingIfNeeded: (count & 7) &* 8)
        count &+= 1
        if count & 7 == 0 {
            state = Self.mix(state, word)
            word = 0
        }
    }

    /// The hash of the bytes added.
    var value: UInt64 { Self.finish(state, word, count: count) }

    /// The hash of `bytes`, and whether they are all ASCII.
    @inline(__always)
    static func of(_ bytes: UnsafeRawBufferPointer) -> (hash: UInt64, isASCII: Bool) {
        var state = seed, seen: UInt64 = 0, offset = 0
        while offset &+ 8 <= bytes.count {
            let word = ByteWord.load(bytes, at: offset)
            seen |= word
            state = mix(state, word)
            offset &+= 8
        }
        var word: UInt64 = 0, shift: UInt64 = 0
        while offset < bytes.count {
            word |= UInt64(bytes[offset]) &<< shift
            shift &+= 8
            offset &+= 1
        }
        seen |= word
        return (finish(state, word, count: bytes.count), seen & 0x8080_8080_8080_8080 == 0)
    }

    @inline(__always)
    private static func mix(_ state: UInt64, _ word: UInt64) -> UInt64 {
        (state ^ word) &* 0x9E37_79B9_7F4A_7C15
    }

    /// The last bytes and the length mixed in, then every bit spread over the whole hash, so
    /// that its low bits (where ``MemberIndex`` starts its search) vary with every byte. A
    /// multiply carries a bit only upwards: folding the high half down once left the low bits
    /// blind to a name's seventh and eighth bytes, and `field_10` to `field_99` all started at
    /// one slot (a run of 89 for 100 such names; `user.N.name`, 439 for 100,000).
    @inline(__always)
    private static func finish(_ state: UInt64, _ word: UInt64, count: Int) -> UInt64 {
        var hash = mix(state ^ UInt64(truncatingIfNeeded: count), word)
        hash ^= hash &>> 32
        hash &*= 0xD6E8_FEB8_6659_FD93
        return hash ^ (hash &>> 32)
    }
}
