import Foundation

/// The errors `JSONDecoder` throws, word for word, when a value of one kind is read as another
/// (a string as a `Bool`, an object as an array, null as anything). The tape decides these as
/// `JSONDecoder` does, from the value's kind alone, so it throws them without failing the
/// document: a type that tries one kind after another under `try?` goes on as it would there,
/// where sending the whole document to `JSONDecoder` at the first miss decoded it twice.
extension JSONTape {
    /// What reading the value at `index`, whose kind is not the one `type` reads, throws.
    /// `JSONDecoder` reads null as a missing value, except for `Bool`, where null is one kind
    /// among others.
    func mismatch(_ type: Any.Type, at index: Int, path: [any CodingKey]) -> DecodingError {
        let kind = values[index].kind
        if kind == .null, type != Bool.self {
            return .valueNotFound(type, .init(codingPath: path, debugDescription: "Cannot get value of type \(type) -- found null value instead"))
        }
        return .typeMismatch(type, .init(codingPath: path, debugDescription: "Expected to decode \(type) but found \(Self.described(kind)) instead."))
    }

    /// What asking for a keyed (`keyed`) or unkeyed container of the value at `index`, of
    /// another kind, throws.
    func containerMismatch(keyed: Bool, at index: Int, path: [any CodingKey]) -> DecodingError {
        let type: Any.Type = keyed ? [String: Any].self : [Any].self
        guard values[index].kind != .null else {
            let container = keyed ? "keyed" : "unkeyed"
            return .valueNotFound(type, .init(codingPath: path, debugDescription: "Cannot get \(container) decoding container -- found null value instead"))
        }
        return .typeMismatch(type, .init(codingPath: path, debugDescription: "Expected to decode \(type) but found \(Self.described(values[index].kind)) instead."))
    }

    /// A kind named as `JSONDecoder` names it in its errors.
    private static func described(_ kind: Kind) -> String {
        switch kind {
        case .object: "a dictionary"
        case .array: "an array"
        case .string: "a string"
        case .number: "number"
        case .true, .false: "bool"
        case .null: "null"
        }
    }
}
