import Foundation

/// Parameters sent as an `application/x-www-form-urlencoded` body, written by the same rules
/// as ``URLParameters`` (see ``QueryEncoding``).
///
/// ```swift
/// FormParameters(["user": "ada", "password": "•••"])
/// ```
public struct FormParameters: RequestParameters {
    let source: QueryParameterSource
    /// How values are written.
    public var encoding: QueryEncoding
    public var headers: HTTPHeaders

    /// Creates form parameters from a dictionary of mixed values.
    public init(_ values: [String: any Sendable], encoding: QueryEncoding = .default, headers: HTTPHeaders = [:]) {
        source = .dictionary(values)
        self.encoding = encoding
        self.headers = headers
    }

    /// Creates form parameters from the properties of an `Encodable` value.
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

    public func encode(into draft: inout RequestDraft) throws {
        draft.body = .data(Data(encoding.encode(try source.members()).utf8))
        draft.headers["Content-Type"] = "application/x-www-form-urlencoded; charset=utf-8"
    }
}
