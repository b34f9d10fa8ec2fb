/// The members of a large object by the hash of their names: for each hash, the first member
/// that has it. A flat table of one word per slot, open addressing, where a `[UInt64: Int]`
/// hashed every name's hash again through `Hasher` (8% of decoding a wide object).
///
/// A slot holds the upper half of the name's hash and the member's index plus one (zero is
/// empty). Two names may share a half; the caller compares the member's name anyway.
///
/// Only the slots are stored, as a plain array: a container holding a struct of its own here
/// had its generic metadata looked up at each use, which doubled the time of small objects.
enum MemberIndex {
    /// No members: an object searched member by member.
    static let none: [UInt64] = []

    /// Slots for `count` members, the table at most half full.
    static func slots(for count: Int) -> [UInt64] {
        var size = 16
        while size < count * 2 { size <<= 1 }
        return Array(repeating: 0, count: size)
    }

    /// Records `member` under `hash`, unless a member with the same hash came first.
    @inline(__always)
    static func insert(_ member: Int, hash: UInt64, into slots: inout [UInt64]) {
        let tag = hash >> 32, mask = slots.count - 1
        var slot = start(hash) & mask
        while slots[slot] != 0 {
            if slots[slot] >> 32 == tag { return }
            slot = (slot + 1) & mask
        }
        slots[slot] = tag << 32 | UInt64(member + 1)
    }

    /// The first member recorded under `hash`, or `nil` when no member has it.
    @inline(__always)
    static func member(hash: UInt64, in slots: [UInt64]) -> Int? {
        let tag = hash >> 32, mask = slots.count - 1
        var slot = start(hash) & mask
        while slots[slot] != 0 {
            if slots[slot] >> 32 == tag { return Int(truncatingIfNeeded: slots[slot] & 0xFFFF_FFFF) - 1 }
            slot = (slot + 1) & mask
        }
        return nil
    }

    /// Where a hash's search starts: its lower half (``NameHash`` folds the upper bits into it).
    @inline(__always)
    private static func start(_ hash: UInt64) -> Int {
        Int(truncatingIfNeeded: hash & 0xFFFF_FFFF)
    }
}
