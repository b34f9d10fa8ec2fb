import Foundation

/// Parameters sent as an `application/x-www-form-urlencoded` body, written by the same rules
/// as ``URLParameters`` (see ``QueryEncoding``).
///
/// ```swift
/// FormParameters(["user": "ada", "password": "•••"])
/// ```
public struct FormParameters: RequestParameters {
    /// The pairs, written as a query would be.
    let pairs: URLParameters
    /// The request's own headers; they win over the encoder's and the configuration's.
    public var headers: HTTPHeaders

    /// Creates a form from a dictionary, with the values ``URLParameters`` takes.
    public init(_ values: [String: any Sendable], encoding: QueryEncoding = QueryEncoding(), headers: HTTPHeaders = [:]) {
        pairs = URLParameters(values, encoding: encoding)
        self.headers = headers
    }

    /// Creates a form from the properties of an `Encodable` value, written through `encoder`.
    public init(_ value: some Encodable & Sendable, encoder: JSONEncoder = JSONEncoder(), encoding: QueryEncoding = QueryEncoding(),
                headers: HTTPHeaders = [:]) {
        pairs = URLParameters(value, encoder: encoder, encoding: encoding)
        self.headers = headers
    }

    /// Sets the encoded pairs as `draft`'s body, with their `Content-Type`.
    public func encode(into draft: inout RequestDraft) throws {
        draft.body = .data(Data(try pairs.encodedPairs().utf8))
        draft.headers["Content-Type"] = "application/x-www-form-urlencoded; charset=utf-8"
    }
}
