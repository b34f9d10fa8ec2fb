import Foundation

/// A parameter value in the shape query and form encoding understand.
enum QueryValue: Sendable, Equatable, Decodable {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([QueryValue])
    case object([String: QueryValue])

    /// Reads the value a JSON encoder wrote; booleans are tried first, as JSON keeps them apart.
    /// A number is read as the widest exact type that holds it, so that a `UInt64` id or a
    /// `Decimal` amount goes out as written, not rounded through `Double`.
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let integer = try? container.decode(Int64.self) {
            self = .number(String(integer))
        } else if let integer = try? container.decode(UInt64.self) {
            self = .number(String(integer))
        } else if let number = try? container.decode(Decimal.self) {
            self = .number(number.description)
        } else if let number = try? container.decode(Double.self) {
            self = .number(String(number))
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let items = try? container.decode([QueryValue].self) {
            self = .array(items)
        } else {
            self = .object(try container.decode([String: QueryValue].self))
        }
    }

    /// Converts a dictionary of mixed values, naming the first one that cannot be encoded.
    static func members(of values: [String: any Sendable]) throws -> [(key: String, value: QueryValue)] {
        try values.map { key, value in (key, try make(value, path: key)) }
    }

    /// Converts any supported value: strings, numbers, booleans, arrays, dictionaries, `nil`,
    /// `UUID`, `URL`, `Date` (ISO 8601) and any other `Encodable`.
    static func make(_ value: Any, path: String) throws -> QueryValue {
        switch value {
        case let optional as any OptionalConvertible:
            guard let wrapped = optional.wrappedValue else { return .null }
            return try make(wrapped, path: path)
        case let text as String: return .string(text)
        case let text as Substring: return .string(String(text))
        case let flag as Bool: return .bool(flag)
        case let integer as any BinaryInteger: return .number("\(integer)")
        case let number as Double: return try finite(number, number.isFinite, path: path)
        case let number as Float: return try finite(number, number.isFinite, path: path)
        case let number as Decimal: return try finite(number, !number.isNaN, path: path)
        case let id as UUID: return .string(id.uuidString)
        case let url as URL: return .string(url.absoluteString)
        case let date as Date: return .string(ISO8601DateFormatter().string(from: date))
        case let items as [Any]:
            return .array(try items.enumerated().map { index, item in try make(item, path: "\(path)[\(index)]") })
        case let members as [String: Any]:
            return .object(try members.reduce(into: [:]) { result, member in
                result[member.key] = try make(member.value, path: "\(path)[\(member.key)]")
            })
        case let encodable as any Encodable:
            return try encoded(encodable, path: path)
        default:
            throw APIError.encodingFailed(.init(
                parameter: path,
                underlying: UnsupportedValue(type: String(describing: type(of: value)))
            ))
        }
    }

    /// A number as text, unless it is NaN or infinite: the server would read `nan` or `inf` as
    /// a string, or not at all. (JSON encoding refuses them too.)
    private static func finite(_ number: some CustomStringConvertible, _ isFinite: Bool, path: String) throws -> QueryValue {
        guard isFinite else {
            throw APIError.encodingFailed(.init(parameter: path, underlying: NonFiniteNumber(value: number.description)))
        }
        return .number(number.description)
    }

    /// Converts an `Encodable` through JSON, which keeps numbers, booleans and nesting apart.
    static func encoded(_ value: any Encodable, encoder: JSONEncoder = JSONEncoder(), path: String) throws -> QueryValue {
        do {
            let json = try encoder.encode(value)
            return try JSONDecoder().decode(QueryValue.self, from: json)
        } catch {
            throw APIError.encodingFailed(.init(parameter: path, underlying: error))
        }
    }

    /// NaN or an infinity, which has no place in a query or form.
    struct NonFiniteNumber: Error, CustomStringConvertible {
        let value: String
        var description: String { "\(value) is not a finite number, so it cannot be sent" }
    }

    /// A value query encoding has no way to write.
    struct UnsupportedValue: Error, CustomStringConvertible {
        let type: String
        var description: String {
            "a \(type) cannot be written as a query value; use a string, number, boolean, array, dictionary or Encodable"
        }
    }
}

/// Lets a value of unknown type be checked for being `nil`.
private protocol OptionalConvertible {
    var wrappedValue: Any? { get }
}

extension Optional: OptionalConvertible {
    fileprivate var wrappedValue: Any? { self.map { $0 as Any } }
}
