import Foundation

/// A body turned into the bytes it is compared by, a piece at a time, so that a large upload is
/// digested without being held whole: a multipart body's without its boundary, which is new at
/// each send, and with its JSON parts' members in order of name (`JSONEncoder` on Linux writes
/// them in another order in each process); also without the ordering, as files recorded before
/// it came in were digested.
struct ComparableBody {
    /// A JSON part longer than this is compared as it was sent, its members left in their order.
    static let largestOrderedPart = 4 << 20
    /// A part whose head has not ended within this many bytes is not a JSON part.
    static let largestPartHead = 16 << 10

    /// The boundary being found, or `nil` for a body that is not multipart: its bytes are
    /// compared as they are.
    private var boundary: NeedleFinder?
    private var delimiter = NeedleFinder(Data("--BOUNDARY".utf8))
    /// The part read so far, while it may still be a JSON part to put in order.
    private var part = Data()
    /// The part is not put in order: its bytes pass as they come.
    private var partPasses = false

    /// Whether the two forms may differ: only a multipart body's do.
    var hasTwoForms: Bool { boundary != nil }

    init(contentType: String) {
        if contentType.lowercased().contains("multipart/"), let boundary = BodyValues.boundary(contentType), !boundary.isEmpty {
            self.boundary = NeedleFinder(Data(boundary.utf8))
        }
    }

    /// The next bytes of the two forms, from the body's next bytes.
    mutating func take(_ data: Data) -> (ordered: Data, unordered: Data) {
        guard var finder = boundary else { return (data, data) }
        let replaced = Self.replaced(finder.take(data))
        boundary = finder
        return (ordered(delimiter.take(replaced)), replaced)
    }

    /// The last bytes of the two forms, once the body has ended.
    mutating func end() -> (ordered: Data, unordered: Data) {
        guard var finder = boundary else { return (Data(), Data()) }
        let replaced = Self.replaced(finder.end())
        boundary = finder
        let pieces = delimiter.take(replaced) + delimiter.end()
        return (ordered(pieces) + endPart(), replaced)
    }

    /// The whole body's two forms.
    static func of(_ body: Data, contentType: String) -> (ordered: Data, unordered: Data) {
        var comparable = ComparableBody(contentType: contentType)
        let (ordered, unordered) = comparable.take(body)
        let (lastOrdered, lastUnordered) = comparable.end()
        return (ordered + lastOrdered, unordered + lastUnordered)
    }

    private static func replaced(_ pieces: [NeedleFinder.Piece]) -> Data {
        pieces.reduce(into: Data()) { result, piece in
            switch piece {
            case .bytes(let bytes): result += bytes
            case .needle: result += Data("BOUNDARY".utf8)
            }
        }
    }

    private mutating func ordered(_ pieces: [NeedleFinder.Piece]) -> Data {
        var result = Data()
        for piece in pieces {
            switch piece {
            case .bytes(let bytes):
                result += partTaking(bytes)
            case .needle:
                result += endPart() + Data("--BOUNDARY".utf8)
            }
        }
        return result
    }

    /// The bytes that pass now from the part's next bytes: none while it may be a JSON part.
    private mutating func partTaking(_ bytes: Data) -> Data {
        if partPasses { return bytes }
        part += bytes
        let head = part.range(of: Data("\r\n\r\n".utf8))
        let passes = head.map { !Self.isJSON(head: part[part.startIndex..<$0.lowerBound]) || part.count > Self.largestOrderedPart }
            ?? (part.count > Self.largestPartHead)
        guard passes else { return Data() }
        partPasses = true
        defer { part = Data() }
        return part
    }

    /// The rest of the part that has ended: a JSON part's members in order of name, or its
    /// bytes as they came when it does not parse.
    private mutating func endPart() -> Data {
        defer { (part, partPasses) = (Data(), false) }
        guard !partPasses else { return Data() }
        let lineEnd = Data("\r\n".utf8)
        guard let head = part.range(of: Data("\r\n\r\n".utf8)), part.suffix(2) == lineEnd,
              let value = try? JSONSerialization.jsonObject(with: part[head.upperBound..<(part.endIndex - 2)], options: [.fragmentsAllowed]),
              let ordered = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes])
        else { return part }
        return part[part.startIndex..<head.upperBound] + ordered + lineEnd
    }

    private static func isJSON(head: Data) -> Bool {
        String(decoding: head, as: UTF8.self).lowercased().split(separator: "\r\n")
            .contains { $0.hasPrefix("content-type:") && $0.contains("json") }
    }
}

/// Finds a needle in bytes that come a piece at a time, as `Data.range(of:)` would in the
/// whole: left to right, each one found after the last.
struct NeedleFinder {
    enum Piece {
        case bytes(Data)
        case needle
    }

    private let needle: Data
    /// The last bytes seen, too few to be ruled out as a needle's start.
    private var carry = Data()

    init(_ needle: Data) {
        self.needle = needle
    }

    /// The bytes and needles found, up to where a needle may still be starting.
    mutating func take(_ data: Data) -> [Piece] {
        let buffer = carry.isEmpty ? data : carry + data
        var pieces: [Piece] = []
        var start = buffer.startIndex
        while let found = buffer.range(of: needle, in: start..<buffer.endIndex) {
            if found.lowerBound > start { pieces.append(.bytes(buffer[start..<found.lowerBound])) }
            pieces.append(.needle)
            start = found.upperBound
        }
        // No needle starts before `safe`: one would have fitted and been found.
        let safe = max(start, buffer.endIndex - (needle.count - 1))
        if safe > start { pieces.append(.bytes(buffer[start..<safe])) }
        carry = Data(buffer[safe...])
        return pieces
    }

    /// The bytes left once the body has ended.
    mutating func end() -> [Piece] {
        defer { carry = Data() }
        return carry.isEmpty ? [] : [.bytes(carry)]
    }
}
