import Foundation

/// A JSON document read once into a flat list of values, in document order: what
/// ``TapeDecoder`` decodes from.
///
/// The scanner is stricter than `JSONDecoder`'s: it takes RFC 8259 UTF-8 and nothing else (no
/// byte-order mark, no other encoding, no lone surrogate, at most 512 levels deep). Whatever it
/// refuses goes to `JSONDecoder`, which decides, so a refusal here is never an error by itself.
final class JSONTape {
    /// The document's bytes, copied: a decoder a type keeps past decoding stays valid.
    let bytes: UnsafeMutableRawBufferPointer
    /// Every value, containers before their contents, an object's keys before their values.
    let values: [Value]
    /// How dates and data are read.
    let settings: Settings
    /// The decoder's `userInfo`.
    let userInfo: [CodingUserInfoKey: Any]
    /// Set once the tape cannot answer as `JSONDecoder` would: a number read differently, a type
    /// this tape leaves to it, an error `JSONDecoder` words its own way. The whole document then
    /// goes to `JSONDecoder`, since a type that caught the error may have gone on differently.
    /// A value of another kind than the one asked fails nothing: the tape throws `JSONDecoder`'s
    /// own error for it (`JSONTape+Mismatch.swift`).
    var failed = false

    /// One value: its kind, and where it is.
    struct Value {
        /// What the value is.
        let kind: Kind
        /// For a string, ``plain`` and ``ascii``; for a number, ``integral``; for an object,
        /// ``plainASCIIKeys``.
        let traits: UInt8
        /// Strings and numbers: the offset of the first byte (after the quote). Containers: how
        /// many elements or members.
        let first: UInt32
        /// Strings and numbers: the offset past the last byte (the closing quote). Containers:
        /// the index of the value after the container's contents.
        let last: UInt32
    }

    /// A value's kind.
    enum Kind: UInt8 {
        case object, array, string, number, `true`, `false`, null
    }

    /// A string without escapes.
    static let plain: UInt8 = 1
    /// A string of ASCII bytes only.
    static let ascii: UInt8 = 2
    /// A number without fraction or exponent.
    static let integral: UInt8 = 4
    /// An object whose keys are all plain ASCII strings, which compare byte for byte.
    static let plainASCIIKeys: UInt8 = 8

    /// The decoder's strategies for the values `JSONDecoder` reads in ways of its own.
    struct Settings {
        /// How `Date` values are read.
        var dates: DateReading
        /// Whether `Data` values are Base64 strings, or left to `Data`'s own decoding.
        var base64Data: Bool
        /// Whether names are converted from snake case (`html_url` is read as `htmlUrl`).
        var snakeCase = false
    }

    /// How a tape reads `Date` values.
    enum DateReading {
        case deferredToDate, secondsSince1970, millisecondsSince1970
    }

    /// Reads `data`, or returns `nil` when it is not JSON this tape takes.
    init?(_ data: Data, settings: Settings, userInfo: [CodingUserInfoKey: Any]) {
        guard data.count < Int(UInt32.max) else { return nil }
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(data.count, 1), alignment: 1)
        data.copyBytes(to: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), count: data.count)
        var scanner = JSONTapeScanner(UnsafeRawBufferPointer(rebasing: bytes[..<data.count]))
        guard let values = scanner.scan() else {
            bytes.deallocate()
            return nil
        }
        self.bytes = bytes
        self.values = values
        self.settings = settings
        self.userInfo = userInfo
    }

    deinit { bytes.deallocate() }

    /// The index of the null value the scanner adds after the document: what a super decoder
    /// reads for a missing key, as `JSONDecoder`'s does.
    var missing: Int { values.count - 1 }

    /// The index of the value after `index` and its contents.
    @inline(__always)
    func skip(_ index: Int) -> Int {
        let value = values[index]
        return value.kind == .object || value.kind == .array ? Int(value.last) : index + 1
    }

    /// Marks the document as one for `JSONDecoder` and returns the error to throw. While the
    /// document is decoded, no one sees it: `JSONDecoder` decodes the document again and throws
    /// its own. A decoder a type kept and uses after that throws it to the type.
    func fail() -> TapeFailure {
        failed = true
        return TapeFailure.dataCorrupted(.init(codingPath: [], debugDescription: "The value could not be decoded as the type asked."))
    }

    /// The bytes of a string or number.
    @inline(__always)
    func span(of value: Value) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[Int(value.first)..<Int(value.last)])
    }
}

/// What a tape decoder throws: the document has failed, and `JSONDecoder` will say how. A
/// `DecodingError`, so that a decoder a type keeps and uses after decoding throws what any
/// decoder would.
typealias TapeFailure = DecodingError
