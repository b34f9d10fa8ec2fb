import Foundation

/// Where ``URLParameters`` and ``FormParameters`` take their values from.
enum QueryParameterSource: Sendable {
    /// A dictionary of mixed values.
    case dictionary([String: any Sendable])
    /// An `Encodable` value, written through a JSON encoder so that its own coding keys,
    /// date strategy and key strategy apply.
    case encodable(any Encodable & Sendable, JSONEncoder)

    /// The top-level members, ready for ``QueryEncoding``.
    func members() throws -> [(key: String, value: QueryValue)] {
        switch self {
        case .dictionary(let values):
            return try QueryValue.members(of: values)
        case .encodable(let value, let encoder):
            let typeName = String(describing: type(of: value))
            guard case .object(let members) = try QueryValue.encoded(value, encoder: encoder, path: typeName) else {
                throw APIError.encodingFailed(.init(parameter: typeName, underlying: NotKeyed()))
            }
            return members.map { ($0.key, $0.value) }
        }
    }

    struct NotKeyed: Error, CustomStringConvertible {
        var description: String { "query and form parameters must encode as a keyed container (an object)" }
    }
}
