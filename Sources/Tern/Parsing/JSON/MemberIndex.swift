/// The members of a large object by the hash of their names: for each hash, the first member
/// that has it. A flat table of one word per slot, open addressing, where a `[UInt64: Int]`
/// hashed every name's hash again through `Hasher`, a cost every key of a wide object paid.
///
/// A slot holds the upper half of the name's hash and the member's index plus one (zero is
/// empty). Two names may share a half; the caller compares the member's name anyway.
///
/// Only the slots are stored, as a plain array: a container holding a struct of its own here
/// had its generic metadata looked up at each use, which cost small objects more than the
/// search itself.
enum MemberIndex {
    /// No members: an object searched member by member.
    static let none: [UInt64] = []

    /// Slots for `count` members, the table at most half full.
    static func slots(for count: Int) -> [UInt64] {
        var size = 16
        while size < count * 2 { size <<= 1 }
        return Array(repeating: 0, count: size)
    }

    /// The most taken slots an insertion may pass. Chance keeps a table at most half full far
    /// below it; names chosen to share slots (the hash is fixed and public, so a server can
    /// choose them) would make each insertion pass all those before it, and building the index
    /// quadratic in the object's size.
    static let longestProbe = 64

    /// Records `member` under `hash`, unless a member with the same hash came first. Returns
    /// `false`, recording nothing, when the search for a free slot passes ``longestProbe``:
    /// the object is then `JSONDecoder`'s, whose dictionaries hash with a seed of their own.
    @inline(__always)
    static func insert(_ member: Int, hash: UInt64, into slots: inout [UInt64]) -> Bool {
        let tag = hash >> 32, mask = slots.count - 1
        var slot = start(hash) & mask
        var passed = 0
        while slots[slot] != 0 {
            if slots[slot] >> 32 == tag { return true }
            slot = (slot + 1) & mask
            passed += 1
            guard passed <= longestProbe else { return false }
        }
        slots[slot] = tag << 32 | UInt64(member + 1)
        return true
    }

    /// Where a hash's search starts in a table of `count` slots: for tests that choose names
    /// sharing a slot.
    static func slot(of hash: UInt64, among count: Int) -> Int {
        start(hash) & (count - 1)
    }

    /// How many taken slots a search for `hash` passes before a free one: for tests of how
    /// names spread.
    static func run(from hash: UInt64, in slots: [UInt64]) -> Int {
        var slot = start(hash) & (slots.count - 1), passed = 0
        while slots[slot] != 0, passed < slots.count {
            slot = (slot + 1) & (slots.count - 1)
            passed += 1
        }
        return passed
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
