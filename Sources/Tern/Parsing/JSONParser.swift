import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Decodes JSON bodies with a `JSONDecoder`.
///
/// ```swift
/// let client = APIClient(responseParser: JSONParser(), configuration: .production)
///
/// // Values inside an envelope: {"data": {"items": [...]}}
/// JSONParser(keyPath: "data.items")
///
/// // Error bodies decoded as the server's own error type, like TRON's errorModel:
/// JSONParser(errorType: ShopError.self)
/// ```
///
/// It is an open class: override ``parse(_:from:)`` for envelopes that need code (Osprey's
/// `getInstance`), and decode the envelope through `super`:
///
/// ```swift
/// struct Envelope<Value: Decodable>: Decodable { let page: Int; let results: Value }
///
/// final class PageParser: JSONParser, @unchecked Sendable {
///     override func parse<Value: Decodable>(_ type: Value.Type, from response: Response) throws -> Value {
///         try super.parse(Envelope<Value>.self, from: response).results   // {"page": 1, "results": [...]}
///     }
/// }
/// ```
///
/// On Linux it reads JSON itself, with the same values and errors as `JSONDecoder`, faster (the
/// Benchmarks article measures by how much, payload by payload): it reads a body once into a
/// flat list of values and decodes from that, and gives `JSONDecoder` every document it would not
/// read exactly the same way — anything but strict UTF-8 JSON, a document that fails to decode
/// (errors are `JSONDecoder`'s own), a number it would read otherwise, names from snake case it
/// does not convert plainly, and decoders set to convert keys otherwise, read JSON5, or read
/// dates from strings or closures. A value of another kind than the type asks for (a string read
/// as a `Bool`) throws `JSONDecoder`'s own error, word for word, and a type that catches it goes
/// on as it would there. A document handed on was decoded up to its failure first, so
/// `init(from:)` may run twice on it. A `JSONDecoder` subclass is always used as it is.
///
/// Subclasses must keep their stored properties immutable and `Sendable`: a parser is used from
/// many threads at once.
open class JSONParser: ResponseParser, @unchecked Sendable {   // unchecked: Swift cannot check a class others subclass
    /// The decoder used for every value.
    package let decoder: JSONDecoder
    /// The path of keys, such as `["data", "items"]`, under which values sit; empty for the top level.
    package let keyPath: [String]
    /// The type error bodies decode as, if any.
    package let errorType: (any (Decodable & Error & Sendable).Type)?

    /// Creates a JSON parser.
    ///
    /// - Parameters:
    ///   - decoder: The decoder; configure it for dates and key strategies.
    ///   - keyPath: Dot-separated keys to the value inside an envelope, such as `"data.items"`.
    ///   - errorType: A type to decode error bodies as; the result is what
    ///     ``APIError/StatusFailure/serverError(as:decoder:)`` returns.
    public init(
        decoder: JSONDecoder = JSONDecoder(),
        keyPath: String? = nil,
        errorType: (any (Decodable & Error & Sendable).Type)? = nil
    ) {
        self.decoder = decoder
        self.keyPath = keyPath?.split(separator: ".").map(String.init) ?? []
        self.errorType = errorType
    }

    /// `application/json`
    open var acceptHeader: String? { "application/json" }

    /// Decodes `type` from the response's body, at the key path when one is set: the override
    /// point for envelopes that need code.
    open func parse<Value: Decodable>(_ type: Value.Type, from response: Response) throws -> Value {
        try instance(from: response.body)
    }

    /// The value in `data`, at the key path when one is set.
    private func instance<T: Decodable>(from data: Data) throws -> T {
        guard !keyPath.isEmpty else { return try decode(T.self, from: data) }
        return try EnvelopePath.$keys.withValue(keyPath) {
            try decode(KeyPathEnvelope<T>.self, from: data).value
        }
    }

    /// Decodes `type` from `data` with `decoder`, as `decoder.decode(_:from:)` does; faster
    /// on Linux (see above).
    package func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try decoder.decodeFaster(type, from: data)
    }

    /// The server's error body decoded as the error type, when one is set and the body decodes.
    open func serverError(from response: Response) -> (any Error & Sendable)? {
        guard let errorType, !response.body.isEmpty else { return nil }
        return decodeError(errorType, from: response.body)
    }

    private func decodeError<ServerError: Decodable & Error & Sendable>(_ type: ServerError.Type, from body: Data) -> ServerError? {
        try? decode(type, from: body)
    }
}

/// The key path of the envelope being decoded on this thread or task.
///
/// It travels as a task-local value: the shared decoder stays untouched, and concurrent parses
/// with different paths cannot see each other's.
private enum EnvelopePath {
    @TaskLocal static var keys: [String] = []
}

/// A value found by walking a key path into the document, with the decoder's own strategies.
/// Each key is as the decoder reads the body's (`searchResults` under `.convertFromSnakeCase`),
/// or as the body writes it (`search_results`), as a page's cursor path is read.
private struct KeyPathEnvelope<Value: Decodable>: Decodable {
    let value: Value

    init(from decoder: any Decoder) throws {
        let path = EnvelopePath.keys
        var container = try decoder.container(keyedBy: PathKey.self)
        for key in path.dropLast() {
            container = try container.nestedContainer(keyedBy: PathKey.self, forKey: Self.key(key, in: container))
        }
        value = try container.decode(Value.self, forKey: Self.key(path[path.count - 1], in: container))
    }

    /// `name`, or the name `.convertFromSnakeCase` makes of it where only that is there.
    private static func key(_ name: String, in container: KeyedDecodingContainer<PathKey>) -> PathKey {
        guard !container.contains(PathKey(name)), let converted = SnakeCaseName.converted(name),
              container.contains(PathKey(converted)) else { return PathKey(name) }
        return PathKey(converted)
    }
}

/// A coding key made from any string.
private struct PathKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
