import Foundation

/// An object's members, found by key as `JSONDecoder` finds them: the first member of a name
/// wins, and names compare as Swift strings do.
struct TapeKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: TapeDecoder

    init(decoder: TapeDecoder) {
        self.decoder = decoder
    }

    /// Whether names are read from snake case.
    private var snakeCase: Bool { decoder.tape.settings.snakeCase }

    var codingPath: [any CodingKey] { decoder.codingPath }

    var allKeys: [Key] {
        var seen = Set<String>()
        var numbers = Set<Int>()
        // Read from snake case, keys are converted for a type that lists them and not for a
        // dictionary, which JSONDecoder reads apart: the document is its.
        if snakeCase { _ = decoder.tape.fail() }
        let keys = decoder.tape.members(ofObjectAt: decoder.index).compactMap { name, _ in
            seen.insert(name).inserted ? Key(stringValue: name) : nil
        }
        // Two names for one number ("1" and "01", read as `[Int: T]` keys): which one wins
        // depends on JSONDecoder's order of keys, so the document is its to decode.
        if keys.contains(where: { key in key.intValue.map { !numbers.insert($0).inserted } ?? false }) { _ = decoder.tape.fail() }
        return keys
    }

    func contains(_ key: Key) -> Bool { find(key) != nil }

    /// The index of the value under `key`, if the object has one.
    private func find(_ key: some CodingKey) -> Int? {
        let name = key.stringValue
        if let names = decoder.members.names { return names[name] }
        switch searchBytes(for: name) {
        case .found(let index): return index
        case .absent: return nil
        case .undecided:
            // Names read from snake case, compared with a name stored apart: JSONDecoder's.
            guard !snakeCase else { _ = decoder.tape.fail(); return nil }
            // A name that is not ASCII may still equal one that is, as Swift compares strings.
            return decoder.tape.members(ofObjectAt: decoder.index).first { $0.0 == name }?.1
        }
    }

    private func searchBytes(for name: String) -> ByteSearch {
        let tape = decoder.tape, hashed = decoder.members.hashed
        return name.utf8.withContiguousStorageIfAvailable { wanted -> ByteSearch in
            // The name's hash, for a large object, in the same pass as the look for bytes that
            // are not ASCII.
            var hash: UInt64 = 0, isASCII: Bool
            if hashed.isEmpty {
                var bits: UInt8 = 0
                for byte in wanted { bits |= byte }
                isASCII = bits < 0x80
            } else {
                (hash, isASCII) = NameHash.of(UnsafeRawBufferPointer(wanted))
            }
            guard isASCII else {
                // One not ASCII may equal a converted name as Swift compares strings: JSONDecoder's.
                if snakeCase { _ = tape.fail(); return .absent }
                return .undecided
            }
            if !hashed.isEmpty {
                // No member has the name's hash: none has the name. One has it: it is the first
                // with that name, unless two names share the hash, which the search below settles.
                guard let member = MemberIndex.member(hash: hash, in: hashed) else { return .absent }
                if matches(tape.values[member], wanted) { return .found(member + 1) }
            }
            var member = decoder.index + 1
            for _ in 0..<tape.values[decoder.index].first {
                if matches(tape.values[member], wanted) { return .found(member + 1) }
                member = tape.skip(member + 1)
            }
            return .absent
        } ?? .undecided
    }

    /// Whether the member name `candidate` is `wanted`, converted from snake case if names are.
    @inline(__always)
    private func matches(_ candidate: JSONTape.Value, _ wanted: UnsafeBufferPointer<UInt8>) -> Bool {
        let tape = decoder.tape
        if snakeCase { return SnakeCaseName.converts(tape.span(of: candidate), to: wanted) }
        return Int(candidate.last - candidate.first) == wanted.count
            && ByteWord.equal(tape.bytes.baseAddress! + Int(candidate.first), wanted.baseAddress!, count: wanted.count)
    }

    private func value(for key: Key) throws -> Int {
        guard let index = find(key) else { throw decoder.tape.fail() }
        return index
    }

    /// The coding path of the value under `key`, for an error.
    private func path(_ key: Key) -> [any CodingKey] { codingPath + [key] }

    /// What `read` makes of the value under `key`; `nil` when there is none or it is null.
    private func ifPresent<T>(_ key: Key, _ read: (Int) throws -> T) rethrows -> T? {
        guard let index = find(key), !decoder.tape.isNull(index) else { return nil }
        return try read(index)
    }

    func decodeNil(forKey key: Key) throws -> Bool { decoder.tape.isNull(try value(for: key)) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decoder.tape.bool(at: value(for: key), path: path(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decoder.tape.string(at: value(for: key), path: path(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decoder.tape.double(at: value(for: key), path: path(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decoder.tape.float(at: value(for: key), path: path(key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(forKey: key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(forKey: key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(forKey: key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(forKey: key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(forKey: key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(forKey: key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(forKey: key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(forKey: key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(forKey: key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(forKey: key) }
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    func decode(_ type: Int128.Type, forKey key: Key) throws -> Int128 { throw decoder.tape.fail() }
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    func decode(_ type: UInt128.Type, forKey key: Key) throws -> UInt128 { throw decoder.tape.fail() }

    @inline(__always)
    private func integer<T: FixedWidthInteger>(forKey key: Key) throws -> T {
        try decoder.tape.integer(at: value(for: key), as: T.self, path: path(key))
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decoder.tape.decode(type, at: value(for: key), parent: decoder, key: .member(key))
    }

    // Absent or null is nil, as in `JSONDecoder`; these skip the protocol's default, which
    // would search the object three times.
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try ifPresent(key) { try decoder.tape.bool(at: $0, path: path(key)) }
    }

    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try ifPresent(key) { try decoder.tape.string(at: $0, path: path(key)) }
    }

    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try ifPresent(key) { try decoder.tape.double(at: $0, path: path(key)) }
    }

    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        try ifPresent(key) { try decoder.tape.integer(at: $0, as: type, path: path(key)) }
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try ifPresent(key) { try decoder.tape.decode(type, at: $0, parent: decoder, key: .member(key)) }
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try decoder.child(at: value(for: key), key: .member(key)).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder.child(at: value(for: key), key: .member(key)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        superDecoder(named: SuperKey())
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        superDecoder(named: key)
    }

    /// A decoder for the member named `key`, or for null when there is none, as in `JSONDecoder`.
    private func superDecoder(named key: some CodingKey) -> TapeDecoder {
        decoder.child(at: find(key) ?? decoder.tape.missing, key: .member(key))
    }

    /// `"super"`, the key `superDecoder()` reads.
    private struct SuperKey: CodingKey {
        var stringValue: String { "super" }
        var intValue: Int? { nil }
        init() {}
        init?(stringValue: String) { nil }
        init?(intValue: Int) { nil }
    }
}

/// What comparing a name's bytes with each member's found: the value's index, none, or nothing
/// certain, for a name not ASCII (or not stored contiguously). Outside the generic container, so
/// that a search does not look its type's metadata up.
private enum ByteSearch {
    case found(Int), absent, undecided
}
