import Foundation

/// Parameters sent in the URL's query, after any query the URL already has.
///
/// ```swift
/// URLParameters(["page": 2, "tags": ["a", "b"], "filter": ["color": "red"]])
/// // ?filter%5Bcolor%5D=red&page=2&tags%5B%5D=a&tags%5B%5D=b
///
/// struct Search: Encodable { let term: String; let limit: Int }
/// URLParameters(Search(term: "tern", limit: 10))
/// ```
///
/// See ``QueryEncoding`` for the rules and their options.
public struct URLParameters: RequestParameters {
    let source: QueryParameterSource
    let encoding: QueryEncoding
    /// The request's own headers; they win over the encoder's and the configuration's.
    public var headers: HTTPHeaders

    /// Creates parameters from a dictionary of strings, numbers, booleans, arrays,
    /// dictionaries, optionals, dates, UUIDs, URLs or other `Encodable` values.
    public init(_ values: [String: any Sendable], encoding: QueryEncoding = QueryEncoding(), headers: HTTPHeaders = [:]) {
        source = .dictionary(values)
        self.encoding = encoding
        self.headers = headers
    }

    /// Creates parameters from the properties of an `Encodable` value, written through
    /// `encoder` so that its coding keys and strategies apply.
    public init(
        _ value: some Encodable & Sendable,
        encoder: JSONEncoder = JSONEncoder(),
        encoding: QueryEncoding = QueryEncoding(),
        headers: HTTPHeaders = [:]
    ) {
        source = .encodable(value, encoder)
        self.encoding = encoding
        self.headers = headers
    }

    /// Percent-encoded `key=value` pairs joined with `&`.
    func encodedPairs() throws -> String {
        encoding.encode(try source.members())
    }

    /// Appends the encoded pairs to `draft`'s query.
    public func encode(into draft: inout RequestDraft) throws {
        let query = try encodedPairs()
        guard !query.isEmpty else { return }
        guard var components = URLComponents(url: draft.url, resolvingAgainstBaseURL: false) else {
            throw Self.invalidURL(in: draft)
        }
        components.percentEncodedQuery = [components.percentEncodedQuery, query]
            .compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: "&")
        guard let url = components.url else { throw Self.invalidURL(in: draft) }
        draft.url = url
    }

    private static func invalidURL(in draft: RequestDraft) -> APIError {
        .invalidRequest(.init(reason: .invalidURL(draft.url.absoluteString), method: draft.method.rawValue))
    }
}
