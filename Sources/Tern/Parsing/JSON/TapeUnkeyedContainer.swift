import Foundation

/// An array's elements in order, read as `JSONDecoder` reads them: a failed read does not move
/// on, and `decodeIfPresent` at the end returns `nil` and counts one more.
struct TapeUnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: TapeDecoder
    /// The index of the next element's value in the tape.
    private var next: Int
    private(set) var currentIndex = 0

    init(decoder: TapeDecoder) {
        self.decoder = decoder
        next = decoder.index + 1
    }

    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { Int(decoder.tape.values[decoder.index].first) }
    var isAtEnd: Bool { currentIndex >= Int(decoder.tape.values[decoder.index].first) }

    /// Reads the next element with `read`, given how to make its coding path, and moves past it.
    private mutating func take<T>(_ read: (JSONTape, Int, () -> [any CodingKey]) throws -> T) throws -> T {
        guard !isAtEnd else { throw decoder.tape.fail() }
        let (decoder, position) = (decoder, currentIndex)
        let value = try read(decoder.tape, next) { TapeDecoder.codingPath(under: decoder, key: .element(position)) }
        next = decoder.tape.skip(next)
        currentIndex += 1
        return value
    }

    /// Reads the next element unless the array has ended or the element is null; moves on
    /// either way.
    private mutating func takeIfPresent<T>(_ read: (JSONTape, Int, () -> [any CodingKey]) throws -> T) throws -> T? {
        guard !isAtEnd else {
            currentIndex += 1
            return nil
        }
        guard !decoder.tape.isNull(next) else {
            next += 1
            currentIndex += 1
            return nil
        }
        return try take(read)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { throw decoder.tape.fail() }
        guard decoder.tape.isNull(next) else { return false }
        next += 1
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try take { try $0.bool(at: $1, path: $2()) } }
    mutating func decode(_ type: String.Type) throws -> String { try take { try $0.string(at: $1, path: $2()) } }
    mutating func decode(_ type: Double.Type) throws -> Double { try take { try $0.double(at: $1, path: $2()) } }
    mutating func decode(_ type: Float.Type) throws -> Float { try take { try $0.float(at: $1, path: $2()) } }
    mutating func decode(_ type: Int.Type) throws -> Int { try take { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try take { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try take { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try take { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try take { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try take { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try take { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try take { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try take { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try take { try $0.integer(at: $1, as: type, path: $2()) } }
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    mutating func decode(_ type: Int128.Type) throws -> Int128 { throw decoder.tape.fail() }
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    mutating func decode(_ type: UInt128.Type) throws -> UInt128 { throw decoder.tape.fail() }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (decoder, position) = (decoder, currentIndex)
        return try take { tape, value, _ in try tape.decode(type, at: value, parent: decoder, key: .element(position)) }
    }

    mutating func decodeIfPresent(_ type: Bool.Type) throws -> Bool? { try takeIfPresent { try $0.bool(at: $1, path: $2()) } }
    mutating func decodeIfPresent(_ type: String.Type) throws -> String? { try takeIfPresent { try $0.string(at: $1, path: $2()) } }
    mutating func decodeIfPresent(_ type: Double.Type) throws -> Double? { try takeIfPresent { try $0.double(at: $1, path: $2()) } }
    mutating func decodeIfPresent(_ type: Float.Type) throws -> Float? { try takeIfPresent { try $0.float(at: $1, path: $2()) } }
    mutating func decodeIfPresent(_ type: Int.Type) throws -> Int? { try takeIfPresent { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decodeIfPresent(_ type: Int8.Type) throws -> Int8? { try takeIfPresent { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decodeIfPresent(_ type: Int16.Type) throws -> Int16? { try takeIfPresent { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decodeIfPresent(_ type: Int32.Type) throws -> Int32? { try takeIfPresent { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decodeIfPresent(_ type: Int64.Type) throws -> Int64? { try takeIfPresent { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decodeIfPresent(_ type: UInt.Type) throws -> UInt? { try takeIfPresent { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decodeIfPresent(_ type: UInt8.Type) throws -> UInt8? { try takeIfPresent { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decodeIfPresent(_ type: UInt16.Type) throws -> UInt16? { try takeIfPresent { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decodeIfPresent(_ type: UInt32.Type) throws -> UInt32? { try takeIfPresent { try $0.integer(at: $1, as: type, path: $2()) } }
    mutating func decodeIfPresent(_ type: UInt64.Type) throws -> UInt64? { try takeIfPresent { try $0.integer(at: $1, as: type, path: $2()) } }

    mutating func decodeIfPresent<T: Decodable>(_ type: T.Type) throws -> T? {
        let (decoder, position) = (decoder, currentIndex)
        return try takeIfPresent { tape, value, _ in try tape.decode(type, at: value, parent: decoder, key: .element(position)) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let (decoder, position) = (decoder, currentIndex)
        return try take { _, value, _ in try decoder.child(at: value, key: .element(position)).container(keyedBy: type) }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (decoder, position) = (decoder, currentIndex)
        return try take { _, value, _ in try decoder.child(at: value, key: .element(position)).unkeyedContainer() }
    }

    mutating func superDecoder() throws -> any Decoder {
        let (decoder, position) = (decoder, currentIndex)
        return try take { _, value, _ in decoder.child(at: value, key: .element(position)) }
    }
}
