/// HTTP header fields in order, with names compared without regard to case.
///
/// Setting a field replaces any field of the same name, whatever its case; the name keeps the
/// spelling it was last set with.
///
/// ```swift
/// var headers: HTTPHeaders = ["Accept": "application/json"]
/// headers["accept"] = "text/plain"        // replaces it
/// headers.merge(["X-Trace": "1"])         // later wins
/// ```
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// One header field.
    public struct Field: Sendable, Equatable {
        /// The name, as it was set.
        public var name: String
        /// The value.
        public var value: String

        /// Creates a field.
        package init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    private var fields: [Field] = []

    /// Creates empty headers.
    package init() {}

    /// Creates headers from fields; a later field replaces an earlier one of the same name.
    package init(_ fields: [(String, String)]) {
        self.init(fields, count: fields.count) { earlier, later in earlier = later }
    }

    /// Creates headers from fields whose names are known to differ, in their order.
    package init(distinct fields: [(name: String, value: String)]) {
        self.fields = fields.map { Field(name: $0.name, value: $0.value) }
    }

    /// Creates headers from the fields of a response's head, in their order: a repeated name's
    /// values joined with commas under its first spelling, as URLSession joins them.
    package init(joining fields: [(name: String, value: String)]) {
        guard Self.mayRepeatAName(fields) else {
            self.init(distinct: fields)
            return
        }
        self.init(fields.lazy.map { ($0.name, $0.value) }, count: fields.count) { earlier, later in earlier.value += ", " + later.value }
    }

    /// Fields in their order, each placed through a dictionary of case-folded names; `merge`
    /// folds a repeat into the field of that name before it. Setting them one by one searched
    /// the fields so far for each, quadratic in their count: a hostile head of many names held
    /// the thread reading it.
    private init(_ fields: some Sequence<(String, String)>, count: Int, merge: (inout Field, Field) -> Void) {
        // None or one: nothing to merge, and no table to build (every request's default
        // options have empty headers).
        guard count > 1 else {
            self.fields = fields.map { Field(name: $0.0, value: $0.1) }
            return
        }
        var positions = [String: Int](minimumCapacity: count)
        self.fields.reserveCapacity(count)
        for (name, value) in fields {
            let field = Field(name: name, value: value), key = name.caseFolded
            if let position = positions[key] {
                merge(&self.fields[position], field)
            } else {
                positions[key] = self.fields.count
                self.fields.append(field)
            }
        }
    }

    /// Whether two of `fields` may share a name, told by a hash of each name with its case
    /// folded, without a string made: a few hashes compared pairwise, more through a set. Most
    /// heads repeat no name, and are then taken as they are.
    private static func mayRepeatAName(_ fields: [(name: String, value: String)]) -> Bool {
        let hashes = fields.map { field in
            // Over the bytes in place: iterating the name's UTF-8 view was most of this.
            field.name.withUTF8Bytes { $0.reduce(UInt64(0xCBF2_9CE4_8422_2325)) { ($0 ^ UInt64($1 | 0x20)) &* 0x0000_0100_0000_01B3 } }
        }
        guard hashes.count > 32 else { return hashes.indices.contains { index in hashes[..<index].contains(hashes[index]) } }
        return Set(hashes).count < hashes.count
    }

    /// Creates headers from a dictionary literal.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The value of the field called `name`, whatever its case; setting `nil` removes it.
    public subscript(name: String) -> String? {
        get { fields.first { $0.name.caseInsensitiveEquals(name) }?.value }
        set {
            if let index = fields.firstIndex(where: { $0.name.caseInsensitiveEquals(name) }) {
                if let newValue {
                    fields[index] = Field(name: name, value: newValue)
                } else {
                    fields.remove(at: index)
                }
            } else if let newValue {
                fields.append(Field(name: name, value: newValue))
            }
        }
    }

    /// Whether a field called `name` is present, whatever its case.
    package func contains(_ name: String) -> Bool {
        self[name] != nil
    }

    /// Adds every field of `other`; on a name present in both, `other` wins.
    public mutating func merge(_ other: HTTPHeaders) {
        for field in other.fields { self[field.name] = field.value }
    }

    /// These headers with `other`'s fields merged in; on a name present in both, `other` wins.
    package func merging(_ other: HTTPHeaders) -> HTTPHeaders {
        var merged = self
        merged.merge(other)
        return merged
    }

    /// The number of fields.
    package var count: Int { fields.count }

    /// Whether there are no fields.
    package var isEmpty: Bool { fields.isEmpty }

    /// The fields in order.
    public func makeIterator() -> IndexingIterator<[Field]> {
        fields.makeIterator()
    }

    /// The fields as a dictionary, as `URLRequest` and `HTTPURLResponse` use them.
    package var dictionary: [String: String] {
        var dictionary = [String: String](minimumCapacity: fields.count)
        for field in fields { dictionary[field.name] = field.value }
        return dictionary
    }

    /// The first field whose name or value HTTP forbids: names must be tokens (RFC 9110 §5.1);
    /// values may hold visible characters, spaces and tabs, but no other control character
    /// (RFC 9110 §5.5): CR and LF would inject headers, and the others are mangled on the way.
    package var firstInvalidField: Field? {
        // Control characters are single bytes in UTF-8 that no other character contains.
        fields.first { field in
            !field.name.isHTTPToken || field.value.withUTF8Bytes { $0.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F } }
        }
    }

    /// The first field that frames the message or the connection (`Content-Length`,
    /// `Transfer-Encoding`, `Connection`, `Host`, `Upgrade`…): those are the transport's to set,
    /// from the body it actually sends. One set by hand that disagrees with the body puts the
    /// next request on a kept-alive connection out of step with its response.
    package var firstFramingField: Field? {
        fields.first { field in
            Self.framingNames.contains { $0.utf8.count == field.name.utf8.count && $0.caseInsensitiveEquals(field.name) }
        }
    }

    /// The fields ``firstFramingField`` looks for.
    static let framingNames = [
        "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Proxy-Connection", "Host", "Upgrade", "TE", "Trailer",
    ]

    /// The headers, as text.
    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }
}

extension HTTPHeaders {
    /// Creates headers from a dictionary, in name order so that the result is stable.
    package init(_ dictionary: [String: String]) {
        self.init(dictionary.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }
}

extension String {
    /// Compares header names without regard to ASCII case, without allocating.
    package func caseInsensitiveEquals(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        // Over the bytes in place: iterating the two UTF-8 views in step made a plain comparison
        // a visible share of reading a response head.
        return withUTF8Bytes { lhs in
            other.withUTF8Bytes { rhs in
                for index in lhs.indices where lhs[index] != rhs[index] {
                    let folded = lhs[index] | 0x20
                    guard folded == rhs[index] | 0x20, folded >= UInt8(ascii: "a"), folded <= UInt8(ascii: "z") else { return false }
                }
                return true
            }
        }
    }

    /// This name with its ASCII letters in lower case: two names that ``caseInsensitiveEquals(_:)``
    /// says are equal fold to the same string, and no two others do.
    fileprivate var caseFolded: String {
        String(decoding: utf8.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// Whether this is an HTTP token (RFC 9110 §5.6.2), as header names and methods must be:
    /// one or more visible ASCII characters other than delimiters.
    package var isHTTPToken: Bool {
        !isEmpty && withUTF8Bytes { bytes in bytes.allSatisfy(\.isHTTPTokenByte) }
    }

    /// Whether this field value is empty once the spaces and tabs around it, which are no part
    /// of it (RFC 9110 §5.5), are taken away. libcurl drops a field whose value is blank, where
    /// the app meant one with an empty value: an `If-Match` so lost made an update unconditional.
    package var isBlankFieldValue: Bool {
        withUTF8Bytes { bytes in bytes.allSatisfy { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") } }
    }
}

private extension UInt8 {
    var isHTTPTokenByte: Bool {
        switch self {
        case UInt8(ascii: "\""), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: ","), UInt8(ascii: "/"),
             UInt8(ascii: ":"), UInt8(ascii: ";"), UInt8(ascii: "<"), UInt8(ascii: "="), UInt8(ascii: ">"),
             UInt8(ascii: "?"), UInt8(ascii: "@"), UInt8(ascii: "["), UInt8(ascii: "\\"), UInt8(ascii: "]"),
             UInt8(ascii: "{"), UInt8(ascii: "}"):
            false
        default:
            self > 0x20 && self < 0x7F
        }
    }
}
