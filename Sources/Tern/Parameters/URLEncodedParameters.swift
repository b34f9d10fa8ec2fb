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
public typealias URLParameters = URLEncodedParameters<QueryStringDestination>

/// Parameters sent as an `application/x-www-form-urlencoded` body, written by the same rules
/// as ``URLParameters`` (see ``QueryEncoding``).
///
/// ```swift
/// FormParameters(["user": "ada", "password": "•••"])
/// ```
public typealias FormParameters = URLEncodedParameters<FormBodyDestination>

/// `key=value` pairs written by ``QueryEncoding`` and placed where `Destination` says: the
/// URL's query (``URLParameters``) or a form body (``FormParameters``).
public struct URLEncodedParameters<Destination: URLEncodedDestination>: RequestParameters {
    let source: QueryParameterSource
    /// How values are written.
    package var encoding: QueryEncoding
    /// The request's own headers; they win over the encoder's and the configuration's.
    public var headers: HTTPHeaders

    /// Creates parameters from a dictionary of strings, numbers, booleans, arrays,
    /// dictionaries, optionals, dates, UUIDs, URLs or other `Encodable` values.
    public init(_ values: [String: any Sendable], encoding: QueryEncoding = .default, headers: HTTPHeaders = [:]) {
        source = .dictionary(values)
        self.encoding = encoding
        self.headers = headers
    }

    /// Creates parameters from the properties of an `Encodable` value, written through
    /// `encoder` so that its coding keys and strategies apply.
    public init(
        _ value: some Encodable & Sendable,
        encoder: JSONEncoder = JSONEncoder(),
        encoding: QueryEncoding = .default,
        headers: HTTPHeaders = [:]
    ) {
        source = .encodable(value, encoder)
        self.encoding = encoding
        self.headers = headers
    }

    /// Writes the parameters and their `Content-Type` into `draft`.
    public func encode(into draft: inout RequestDraft) throws {
        try Destination.place(encoding.encode(try source.members()), in: &draft)
    }
}

/// Where ``URLEncodedParameters`` put their encoded pairs.
public protocol URLEncodedDestination: Sendable {
    /// Puts `query`, percent-encoded `key=value` pairs joined with `&`, into `draft`.
    static func place(_ query: String, in draft: inout RequestDraft) throws
}

/// The URL's query: appended after any query the URL already has.
public enum QueryStringDestination: URLEncodedDestination {
    /// Puts the encoded query where this destination sends it.
    public static func place(_ query: String, in draft: inout RequestDraft) throws {
        guard !query.isEmpty else { return }
        guard var components = URLComponents(url: draft.url, resolvingAgainstBaseURL: false) else {
            throw invalidURL(in: draft)
        }
        components.percentEncodedQuery = [components.percentEncodedQuery, query]
            .compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: "&")
        guard let url = components.url else { throw invalidURL(in: draft) }
        draft.url = url
    }

    private static func invalidURL(in draft: RequestDraft) -> APIError {
        .invalidRequest(.init(reason: .invalidURL(draft.url.absoluteString), method: draft.method.rawValue))
    }
}

/// An `application/x-www-form-urlencoded` body.
public enum FormBodyDestination: URLEncodedDestination {
    /// Puts the encoded query where this destination sends it.
    public static func place(_ query: String, in draft: inout RequestDraft) throws {
        draft.body = .data(Data(query.utf8))
        draft.headers["Content-Type"] = "application/x-www-form-urlencoded; charset=utf-8"
    }
}
