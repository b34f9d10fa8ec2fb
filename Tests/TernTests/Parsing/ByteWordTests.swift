import Foundation
import Testing
@testable import Tern

/// The word-at-a-time tests find the first byte that needs a look, exactly, wherever it is and
/// whatever follows it; and none in a word of plain text, or the fast path never runs.
@Suite(.onTestThreads) struct ByteWordTests {
    static func word(_ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { ByteWord.load($0, at: 0) }
    }

    static func isPlain(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte < 0x80 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\")
    }

    /// The offset of the first byte a mask marks, or 8 for none.
    static func first(_ mask: UInt64) -> Int { mask.trailingZeroBitCount >> 3 }

    @Test func everyByteAtEveryPlaceIsFound() {
        for place in 0..<8 {
            for value in 0...255 {
                var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: 8)
                bytes[place] = UInt8(value)
                let word = Self.word(bytes)
                #expect(Self.first(ByteWord.special(word)) == (Self.isPlain(UInt8(value)) ? 8 : place), "\(value) at \(place)")
                #expect(Self.first(ByteWord.backslashes(word)) == (value == 0x5C ? place : 8), "\(value) at \(place)")
            }
        }
    }

    /// Words of bytes that make borrows (0x00, 0x01, a quote and a backslash side by side): the
    /// first marked byte is the first that needs a look.
    @Test func randomWordsMarkTheirFirstSpecialByteExactly() {
        var generator = SplitMix(seed: 0xB17E)
        let alphabet: [UInt8] = [0x00, 0x01, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80, 0xC3, 0xFF, 0x61, 0x2F]
        for _ in 0..<20_000 {
            let bytes = (0..<8).map { _ in alphabet.randomElement(using: &generator)! }
            let word = Self.word(bytes)
            #expect(Self.first(ByteWord.special(word)) == (bytes.firstIndex { !Self.isPlain($0) } ?? 8), "\(bytes)")
            #expect(Self.first(ByteWord.backslashes(word)) == (bytes.firstIndex(of: 0x5C) ?? 8), "\(bytes)")
        }
    }
}

/// A large object's members by the hash of their names: the first of a hash wins, a hash no
/// member has finds none, and a hash recorded is never reported absent.
@Suite(.onTestThreads) struct MemberIndexTests {
    @Test func findsTheFirstMemberOfEachHash() {
        var slots = MemberIndex.slots(for: 100)
        for member in 0..<100 { #expect(MemberIndex.insert(member * 3, hash: UInt64(member) &* 0x9E37_79B9_7F4A_7C15, into: &slots)) }
        #expect(MemberIndex.insert(999, hash: 5 &* 0x9E37_79B9_7F4A_7C15, into: &slots))   // a later member with a hash seen
        for member in 0..<100 {
            #expect(MemberIndex.member(hash: UInt64(member) &* 0x9E37_79B9_7F4A_7C15, in: slots) == member * 3)
        }
        #expect(MemberIndex.member(hash: 100 &* 0x9E37_79B9_7F4A_7C15, in: slots) == nil)
    }

    @Test func hashesThatShareTheirUpperHalfFindAMemberWithIt() {
        var slots = MemberIndex.slots(for: 8)   // 16 slots: 0x01 and 0x11 start at the same one
        #expect(MemberIndex.insert(7, hash: 0xAAAA_0000_0000_0001, into: &slots))
        #expect(MemberIndex.insert(9, hash: 0xAAAA_0000_0000_0011, into: &slots))
        // The second is not recorded: a search for it finds the first, whose name the caller
        // compares, searching on when it is another's. Never none, which would mean absent.
        #expect(MemberIndex.member(hash: 0xAAAA_0000_0000_0011, in: slots) == 7)
        #expect(MemberIndex.insert(11, hash: 0xAAAA_0000_0000_0002, into: &slots))
        #expect([7, 11].contains(MemberIndex.member(hash: 0xAAAA_0000_0000_0002, in: slots)))
        #expect(MemberIndex.member(hash: 0xBBBB_0000_0000_0001, in: slots) == nil)
    }

    @Test func aFullRunOfSlotsWrapsAround() {
        // Hashes whose search starts at the last of 16 slots: each search walks the run, past
        // the table's end.
        func hash(_ tag: UInt64) -> UInt64 { tag << 32 | 15 }
        var slots = MemberIndex.slots(for: 8)
        #expect(slots.count == 16)
        for member in 0..<8 { #expect(MemberIndex.insert(member, hash: hash(UInt64(member + 1)), into: &slots)) }
        #expect(slots[15] != 0 && slots[0] != 0)
        for member in 0..<8 { #expect(MemberIndex.member(hash: hash(UInt64(member + 1)), in: slots) == member) }
        #expect(MemberIndex.member(hash: hash(99), in: slots) == nil)
    }

    /// Hashes that all start at one slot fill the run after it up to the longest probe; the one
    /// that would pass it is refused, not recorded.
    @Test func anInsertionStopsAtTheLongestProbe() {
        var slots = MemberIndex.slots(for: 200)
        let start = UInt64(3)
        for member in 0...MemberIndex.longestProbe { #expect(MemberIndex.insert(member, hash: UInt64(member + 1) << 32 | start, into: &slots)) }
        #expect(!MemberIndex.insert(999, hash: 999 << 32 | start, into: &slots))
        #expect(MemberIndex.member(hash: 999 << 32 | start, in: slots) == nil)
    }

    /// An object whose names a server chose to share one slot of the index (its hash is fixed,
    /// so any can): building it stops at the longest probe, and `JSONDecoder` decodes the
    /// document instead, to the same value. As many ordinary names stay the tape's.
    @Test func namesChosenToCrowdOneSlotLeaveTheDocumentToJSONDecoder() throws {
        struct Wanted: Decodable, Equatable { let wanted: Int }
        let slotCount = MemberIndex.slots(for: 201).count
        var crowd: [String] = []
        var candidate = 0
        while crowd.count < 200 {
            let name = "k\(candidate)"
            candidate += 1
            let hash = Array(name.utf8).withUnsafeBytes { NameHash.of($0).hash }
            if MemberIndex.slot(of: hash, among: slotCount) == 0 { crowd.append(name) }
        }
        let decoder = JSONDecoder()
        func object(_ names: [String]) -> Data {
            Data(("{" + names.map { "\"\($0)\":0," }.joined() + "\"wanted\":7}").utf8)
        }
        #expect(decoder.decodedByTape(Wanted.self, from: object(crowd)) == nil)
        #expect(try decoder.decodeFaster(Wanted.self, from: object(crowd)) == Wanted(wanted: 7))
        #expect(decoder.decodedByTape(Wanted.self, from: object((0..<200).map { "k\($0)" })) == Wanted(wanted: 7))
    }
}

/// Names hashed eight bytes at a time: given byte by byte (as snake case is read) or at once,
/// the same bytes hash alike; every byte counts, wherever it falls in its word.
@Suite(.onTestThreads) struct NameHashTests {
    static func streamed(_ bytes: [UInt8]) -> UInt64 {
        var hash = NameHash()
        for byte in bytes { hash.add(byte) }
        return hash.value
    }

    static func atOnce(_ bytes: [UInt8]) -> (hash: UInt64, isASCII: Bool) {
        bytes.withUnsafeBytes { NameHash.of($0) }
    }

    @Test func bytesGivenOneByOneHashAsTheyDoAtOnce() {
        var generator = SplitMix(seed: 0x4A5E)
        for length in 0...40 {
            for _ in 0..<20 {
                let bytes = (0..<length).map { _ in UInt8.random(in: 0x21...0x7E, using: &generator) }
                #expect(Self.streamed(bytes) == Self.atOnce(bytes).hash, "\(bytes)")
                #expect(Self.atOnce(bytes).isASCII)
            }
        }
    }

    @Test func aByteChangedAnywhereChangesTheHash() {
        let name = Array("a_rather_long_member_name".utf8)
        let original = Self.atOnce(name).hash
        for place in name.indices {
            var changed = name
            changed[place] ^= 0x01
            #expect(Self.atOnce(changed).hash != original, "byte \(place)")
            // Either half alone tells them apart too: the index keys on each.
            #expect(Self.atOnce(changed).hash >> 32 != original >> 32, "byte \(place)")
            #expect(Self.atOnce(changed).hash & 0xFFFF_FFFF != original & 0xFFFF_FFFF, "byte \(place)")
        }
        // Trailing zero bytes are bytes: a name and the same with a NUL after differ.
        #expect(Self.atOnce(Array("id".utf8)).hash != Self.atOnce(Array("id".utf8) + [0]).hash)
        #expect(Self.atOnce([]).hash != Self.atOnce([0]).hash)
    }

    @Test func aByteBeyondASCIIIsSeenInEveryPlace() {
        for length in 1...20 {
            for place in 0..<length {
                var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                bytes[place] = 0xC3
                #expect(!Self.atOnce(bytes).isASCII, "\(length), \(place)")
            }
        }
    }

    @Test func theNamesOfAWideObjectHashApart() {
        let names = (0..<5_000).map { Array("member_\($0)".utf8) } + (0..<5_000).map { Array("m\($0)".utf8) }
        #expect(Set(names.map { Self.atOnce($0).hash }).count == names.count)
        // The upper half alone, the index's tag, collides rarely.
        #expect(Set(names.map { Self.atOnce($0).hash >> 32 }).count > names.count - 5)
    }

    /// Names of every length to 40 compare equal with themselves and unequal with a byte
    /// changed anywhere, at any offset into larger buffers (loads are unaligned, and the last
    /// word overlaps the one before it).
    @Test func namesCompareEqualExactlyWhenEveryByteIs() {
        for count in 0...40 {
            for offset in 0..<3 {
                let name = (0..<count).map { UInt8(ascii: "a") + UInt8($0 % 26) }
                let a = [UInt8](repeating: 0x7A, count: offset) + name + [0x22]
                a.withUnsafeBytes { a in
                    #expect(ByteWord.equal(a.baseAddress! + offset, name, count: count), "\(count) at \(offset)")
                    for place in 0..<count {
                        var other = name
                        other[place] ^= 0x01
                        #expect(!ByteWord.equal(a.baseAddress! + offset, other, count: count), "\(count): byte \(place)")
                    }
                }
            }
        }
    }
}
