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
    /// How an object's members are found by name; ``ObjectMembers/none`` for other values.
    let members: ObjectMembers

    init(tape: JSONTape, index: Int, parent: TapeDecoder?, key: TapePathKey) {
        self.tape = tape
        self.index = index
        self.parent = parent
        self.key = key
        members = tape.values[index].kind == .object ? ObjectMembers(objectAt: index, in: tape) : .none
    }

    var codingPath: [any CodingKey] {
        var path: [any CodingKey] = []
        var decoder: TapeDecoder? = self
        while let current = decoder {
            if let key = current.key.codingKey { path.append(key) }
            decoder = current.parent
        }
        return path.reversed()
    }

    var userInfo: [CodingUserInfoKey: Any] { tape.userInfo }

    /// A decoder for a value inside this one.
    func child(at index: Int, key: TapePathKey) -> TapeDecoder {
        TapeDecoder(tape: tape, index: index, parent: self, key: key)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard tape.values[index].kind == .object else { throw tape.fail() }
        return KeyedDecodingContainer(TapeKeyedContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard tape.values[index].kind == .array else { throw tape.fail() }
        return TapeUnkeyedContainer(decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { tape.isNull(index) }
    func decode(_ type: Bool.Type) throws -> Bool { try tape.bool(at: index) }
    func decode(_ type: String.Type) throws -> String { try tape.string(at: index) }
    func decode(_ type: Double.Type) throws -> Double { try tape.double(at: index) }
    func decode(_ type: Float.Type) throws -> Float { try tape.float(at: index) }
    func decode(_ type: Int.Type) throws -> Int { try tape.integer(at: index, as: type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try tape.integer(at: index, as: type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try tape.integer(at: index, as: type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try tape.integer(at: index, as: type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try tape.integer(at: index, as: type) }
    func decode(_ type: UInt.Type) throws -> UInt { try tape.integer(at: index, as: type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try tape.integer(at: index, as: type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try tape.integer(at: index, as: type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try tape.integer(at: index, as: type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try tape.integer(at: index, as: type) }
    // 128-bit integers are left to JSONDecoder, which reads them by paths of its own.
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    func decode(_ type: Int128.Type) throws -> Int128 { throw tape.fail() }
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    func decode(_ type: UInt128.Type) throws -> UInt128 { throw tape.fail() }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try tape.decode(type, at: index, parent: parent, key: key)
    }
}

/// The key a value sits under, kept as it came until a coding path is asked for.
enum TapePathKey {
    /// The document itself.
    case root
    /// A member of an object.
    case member(any CodingKey)
    /// An element of an array, at this position.
    case element(Int)

    var codingKey: (any CodingKey)? {
        switch self {
        case .root: nil
        case .member(let key): key
        case .element(let position): ElementKey(position)
        }
    }

    /// An array position in a coding path, named as `JSONDecoder` names it.
    private struct ElementKey: CodingKey {
        let intValue: Int?
        var stringValue: String { "Index \(intValue ?? 0)" }
        init(_ position: Int) { intValue = position }
        init?(stringValue: String) { nil }
        init?(intValue: Int) { self.intValue = intValue }
    }
}

extension JSONTape {
    /// A `Decodable` value at `index`. The types `JSONDecoder` reads in ways of its own are read
    /// here as it reads them, or left to it; the common leaves skip making a decoder.
    func decode<T: Decodable>(_ type: T.Type, at index: Int, parent: TapeDecoder?, key: TapePathKey) throws -> T {
        if T.self == String.self { return unsafeBitCast(try string(at: index), to: T.self) }
        if T.self == Int.self { return unsafeBitCast(try integer(at: index, as: Int.self), to: T.self) }
        if T.self == Double.self { return unsafeBitCast(try double(at: index), to: T.self) }
        if T.self == Bool.self { return unsafeBitCast(try bool(at: index), to: T.self) }
        if T.self == Date.self, settings.dates != .deferredToDate {
            let seconds = try double(at: index)
            return unsafeBitCast(Date(timeIntervalSince1970: settings.dates == .secondsSince1970 ? seconds : seconds / 1000), to: T.self)
        }
        if T.self == Data.self, settings.base64Data {
            guard let data = Data(base64Encoded: try string(at: index)) else { throw fail() }
            return unsafeBitCast(data, to: T.self)
        }
        if T.self == URL.self {
            guard let url = URL(string: try string(at: index)) else { throw fail() }
            return unsafeBitCast(url, to: T.self)
        }
        if T.self == Decimal.self { return unsafeBitCast(try decimal(at: index), to: T.self) }
        if values[index].kind == .array {
            // Arrays of the common leaves need no decoder, nor a look for their conformance.
            if T.self == [String].self { return unsafeBitCast(try elements(ofArrayAt: index) { value, _ in try string(at: value) }, to: T.self) }
            if T.self == [Int].self { return unsafeBitCast(try elements(ofArrayAt: index) { value, _ in try integer(at: value, as: Int.self) }, to: T.self) }
            if T.self == [Double].self { return unsafeBitCast(try elements(ofArrayAt: index) { value, _ in try double(at: value) }, to: T.self) }
            let decoder = TapeDecoder(tape: self, index: index, parent: parent, key: key)
            if let array = T.self as? any TapeDecodableArray.Type { return try decodeArray(array, with: decoder) }
            return try T(from: decoder)
        }
        return try T(from: TapeDecoder(tape: self, index: index, parent: parent, key: key))
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
