import Foundation

/// How ``URLParameters`` and ``FormParameters`` write values as `key=value` pairs.
///
/// The convention, as in Alamofire's `URLEncodedFormEncoder`:
/// - keys come out sorted, nested keys too, so the same parameters always give the same string;
/// - nested dictionaries use brackets: `filter[color]=red`;
/// - arrays follow `arrays`: `tags[]=a&tags[]=b` by default;
/// - booleans follow `bools`: `1` and `0` by default;
/// - `nil` values are left out;
/// - keys and values are percent-encoded by RFC 3986: all but `A–Z a–z 0–9 - . _ ~`, so a
///   value such as `a b&c=d+e/é` arrives intact (`a%20b%26c%3Dd%2Be%2F%C3%A9`).
public struct QueryEncoding: Sendable, Equatable {
    /// How array elements are keyed.
    public enum ArrayEncoding: Sendable, Equatable {
        /// `tags[]=a&tags[]=b`
        case brackets
        /// `tags=a&tags=b`
        case noBrackets
        /// `tags[0]=a&tags[1]=b`
        case indexInBrackets
    }

    /// How booleans are written.
    public enum BoolEncoding: Sendable, Equatable {
        /// `1` and `0`
        case numeric
        /// `true` and `false`
        case literal
    }

    /// How array elements are keyed.
    package var arrays: ArrayEncoding
    /// How booleans are written.
    package var bools: BoolEncoding

    /// Creates an encoding; the defaults are brackets and numeric booleans.
    public init(arrays: ArrayEncoding = .brackets, bools: BoolEncoding = .numeric) {
        self.arrays = arrays
        self.bools = bools
    }

    /// Brackets for arrays, `1`/`0` for booleans.
    package static let `default` = QueryEncoding()

    /// The percent-encoded `key=value` pairs of `values`, joined with `&`.
    func encode(_ values: [(key: String, value: QueryValue)]) -> String {
        var pairs: [String] = []
        for (key, value) in values.sorted(by: { $0.key < $1.key }) {
            append(value, under: key, to: &pairs)
        }
        return pairs.joined(separator: "&")
    }

    private func append(_ value: QueryValue, under key: String, to pairs: inout [String]) {
        switch value {
        case .null:
            break
        case .string(let text), .number(let text):
            pairs.append(Self.escape(key) + "=" + Self.escape(text))
        case .bool(let flag):
            let text = bools == .numeric ? (flag ? "1" : "0") : (flag ? "true" : "false")
            pairs.append(Self.escape(key) + "=" + text)
        case .array(let items):
            for (index, item) in items.enumerated() {
                let itemKey = switch arrays {
                case .brackets: key + "[]"
                case .noBrackets: key
                case .indexInBrackets: key + "[\(index)]"
                }
                append(item, under: itemKey, to: &pairs)
            }
        case .object(let members):
            for (name, member) in members.sorted(by: { $0.key < $1.key }) {
                append(member, under: key + "[\(name)]", to: &pairs)
            }
        }
    }

    /// RFC 3986's unreserved characters: the only ones left as they are.
    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// Percent-encodes everything but the unreserved characters.
    static func escape(_ text: String) -> String {
        // Only invalid Unicode fails to encode, and Swift strings cannot hold any.
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }
}
