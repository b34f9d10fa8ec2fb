import Foundation

/// A `Decoder` for one value of a ``JSONTape``; it is its own single-value container, as
/// `JSONDecoder`'s is.
final class TapeDecoder: Decoder, SingleValueDecodingContainer {
    let tape: JSONTape
    /// The value's index in the tape.
    let index: Int
    /// The decoder of the value around this one, and the key this one sits under: the coding
    /// path, made only when asked for.
    let parent: TapeDecoder?
    let key: TapePathKey
    /// How an object's members are found by name; ``ObjectMembers/none`` for other values. A
    /// constant, made with the decoder: read at every key a type asks for, a lazy one cost each
    /// read an access check and a copy.
    let members: ObjectMembers

    init(tape: JSONTape, index: Int, parent: TapeDecoder?, key: TapePathKey) {
        self.tape = tape
        self.index = index
        self.parent = parent
        self.key = key
        members = tape.values[index].kind == .object ? ObjectMembers(objectAt: index, in: tape) : .none
    }

    /// Made when first asked, for an error, and kept: a type that tries its kinds in turn has
    /// each miss's error name the same path, and the values inside name it as their start.
    private(set) lazy var codingPath: [any CodingKey] = Self.codingPath(under: parent, key: key)

    /// The coding path of a value under `key` in the value `parent` decodes.
    static func codingPath(under parent: TapeDecoder?, key: TapePathKey) -> [any CodingKey] {
        var path = parent?.codingPath ?? []
        if let key = key.codingKey { path.append(key) }
        return path
    }

    var userInfo: [CodingUserInfoKey: Any] { tape.userInfo }

    /// A decoder for a value inside this one.
    func child(at index: Int, key: TapePathKey) -> TapeDecoder {
        TapeDecoder(tape: tape, index: index, parent: self, key: key)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard tape.values[index].kind == .object else { throw tape.containerMismatch(keyed: true, at: index, path: codingPath) }
        return KeyedDecodingContainer(TapeKeyedContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard tape.values[index].kind == .array else { throw tape.containerMismatch(keyed: false, at: index, path: codingPath) }
        return TapeUnkeyedContainer(decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { tape.isNull(index) }
    func decode(_ type: Bool.Type) throws -> Bool { try tape.bool(at: index, path: codingPath) }
    func decode(_ type: String.Type) throws -> String { try tape.string(at: index, path: codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try tape.double(at: index, path: codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try tape.float(at: index, path: codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try tape.integer(at: index, as: type, path: codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try tape.integer(at: index, as: type, path: codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try tape.integer(at: index, as: type, path: codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try tape.integer(at: index, as: type, path: codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try tape.integer(at: index, as: type, path: codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try tape.integer(at: index, as: type, path: codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try tape.integer(at: index, as: type, path: codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try tape.integer(at: index, as: type, path: codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try tape.integer(at: index, as: type, path: codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try tape.integer(at: index, as: type, path: codingPath) }
    // 128-bit integers are left to JSONDecoder, which reads them by paths of its own.
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    func decode(_ type: Int128.Type) throws -> Int128 { throw tape.fail() }
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    func decode(_ type: UInt128.Type) throws -> UInt128 { throw tape.fail() }

    /// A value read from this one's own: the type reads it through this decoder, not a new one.
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try tape.decode(type, at: index, parent: parent, key: key, decoder: self)
    }
}

/// The key a value sits under, kept as it came until a coding path is asked for.
enum TapePathKey {
    /// The document itself.
    case root
    /// A member of an object.
    case member(any CodingKey)
    /// A member of an object read as a dictionary, by its name.
    case name(String)
    /// An element of an array, at this position.
    case element(Int)

    var codingKey: (any CodingKey)? {
        switch self {
        case .root: nil
        case .member(let key): key
        case .name(let name): _DictionaryCodingKey(stringValue: name)
        case .element(let position): _CodingKey(position)
        }
    }

    /// A dictionary's key in a coding path, named as `Dictionary`'s own decoding names it.
    private struct _DictionaryCodingKey: CodingKey {
        let stringValue: String
        let intValue: Int?
        init(stringValue: String) { (self.stringValue, intValue) = (stringValue, Int(stringValue)) }
        init?(intValue: Int) { (stringValue, self.intValue) = ("\(intValue)", intValue) }
    }

    /// An array position in a coding path, named as `JSONDecoder` names it, type and all, so
    /// that a path printed in an error a type kept reads the same.
    private struct _CodingKey: CodingKey {
        let intValue: Int?
        var stringValue: String { "Index \(intValue ?? 0)" }
        init(_ position: Int) { intValue = position }
        init?(stringValue: String) { nil }
        init?(intValue: Int) { self.intValue = intValue }
    }
}

extension JSONTape {
    /// A `Decodable` value at `index`, through `decoder` when the value already has one. The
    /// types `JSONDecoder` reads in ways of its own are read here as it reads them, or left to it
    /// (any value of another kind than theirs too, whose errors it words its own way); the
    /// common leaves skip making a decoder.
    func decode<T: Decodable>(_ type: T.Type, at index: Int, parent: TapeDecoder?, key: TapePathKey, decoder: TapeDecoder? = nil) throws -> T {
        if T.self == String.self { return unsafeBitCast(try string(at: index, path: TapeDecoder.codingPath(under: parent, key: key)), to: T.self) }
        if T.self == Int.self { return unsafeBitCast(try integer(at: index, as: Int.self, path: TapeDecoder.codingPath(under: parent, key: key)), to: T.self) }
        if T.self == Double.self { return unsafeBitCast(try double(at: index, path: TapeDecoder.codingPath(under: parent, key: key)), to: T.self) }
        if T.self == Bool.self { return unsafeBitCast(try bool(at: index, path: TapeDecoder.codingPath(under: parent, key: key)), to: T.self) }
        if T.self == Date.self, settings.dates != .deferredToDate {
            guard values[index].kind == .number else { throw fail() }
            let seconds = try double(at: index, path: [])
            return unsafeBitCast(Date(timeIntervalSince1970: settings.dates == .secondsSince1970 ? seconds : seconds / 1000), to: T.self)
        }
        if T.self == Data.self, settings.base64Data {
            guard values[index].kind == .string, let data = Data(base64Encoded: try string(at: index, path: [])) else { throw fail() }
            return unsafeBitCast(data, to: T.self)
        }
        if T.self == URL.self {
            guard values[index].kind == .string, let url = URL(string: try string(at: index, path: [])) else { throw fail() }
            return unsafeBitCast(url, to: T.self)
        }
        if T.self == Decimal.self { return unsafeBitCast(try decimal(at: index), to: T.self) }
        if values[index].kind == .array {
            // Arrays of the common leaves need no decoder, nor a look for their conformance.
            if T.self == [String].self { return unsafeBitCast(try leaves(ofArrayAt: index, parent: parent, key: key) { try string(at: $0, path: $1()) }, to: T.self) }
            if T.self == [Int].self { return unsafeBitCast(try leaves(ofArrayAt: index, parent: parent, key: key) { try integer(at: $0, as: Int.self, path: $1()) }, to: T.self) }
            if T.self == [Double].self { return unsafeBitCast(try leaves(ofArrayAt: index, parent: parent, key: key) { try double(at: $0, path: $1()) }, to: T.self) }
            let decoder = decoder ?? TapeDecoder(tape: self, index: index, parent: parent, key: key)
            if let array = T.self as? any TapeDecodableArray.Type { return try decodeArray(array, with: decoder) }
            return try T(from: decoder)
        }
        // `[String: V]` (a single reference wide, which few other types are, so most skip the
        // look for its conformance).
        if values[index].kind == .object, MemoryLayout<T>.size == MemoryLayout<[String: Int]>.size, !settings.snakeCase,
           let dictionary = T.self as? any TapeDecodableDictionary.Type {
            return unsafeBitCast(try dictionary.init(membersOf: decoder ?? TapeDecoder(tape: self, index: index, parent: parent, key: key)), to: T.self)
        }
        return try T(from: decoder ?? TapeDecoder(tape: self, index: index, parent: parent, key: key))
    }

    /// The elements of the array at `index`, under `key` in `parent`'s value, each a leaf that
    /// `read` reads from its value's index, given how to make its coding path.
    private func leaves<Element>(ofArrayAt index: Int, parent: TapeDecoder?, key: TapePathKey,
                                 _ read: (_ value: Int, _ path: () -> [any CodingKey]) throws -> Element) throws -> [Element] {
        try elements(ofArrayAt: index) { value, position in
            try read(value) { TapeDecoder.codingPath(under: parent, key: key) + [TapePathKey.element(position).codingKey!] }
        }
    }

    /// The elements of the array at `index`, each read by `read` from its value's index and its
    /// position, into room made for all of them at once.
    func elements<Element>(ofArrayAt index: Int, _ read: (_ value: Int, _ position: Int) throws -> Element) throws -> [Element] {
        let count = Int(values[index].first)
        var elements: [Element] = []
        elements.reserveCapacity(count)
        var value = index + 1
        for position in 0..<count {
            elements.append(try read(value, position))
            value = skip(value)
        }
        return elements
    }

    /// An array of `T`, which is `Array`, read at its full length at once.
    private func decodeArray<T, A: TapeDecodableArray>(_ array: A.Type, with decoder: TapeDecoder) throws -> T {
        unsafeBitCast(try A(elementsOf: decoder), to: T.self)
    }
}

/// `Array`, read element by element into room for all of them, where `Array.init(from:)`
/// grows as it goes, looking its storage's type up at each step.
protocol TapeDecodableArray {
    init(elementsOf decoder: TapeDecoder) throws
}

extension Array: TapeDecodableArray where Element: Decodable {
    init(elementsOf decoder: TapeDecoder) throws {
        let tape = decoder.tape
        self = try tape.elements(ofArrayAt: decoder.index) { value, position in
            try tape.decode(Element.self, at: value, parent: decoder, key: .element(position))
        }
    }
}
