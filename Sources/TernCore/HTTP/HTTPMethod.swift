/// An HTTP request method: the standard ones as constants, any other by name.
///
/// ```swift
/// let purge: HTTPMethod = "PURGE"
/// ```
public struct HTTPMethod: WireName, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The method's name, as sent on the wire.
    public let rawValue: String

    /// Creates a method from its name; names are case-sensitive and sent as given.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Creates a method from its name, as a string literal.
    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    /// The method's name.
    public var description: String { rawValue }

    /// `GET`
    public static let get: HTTPMethod = "GET"
    /// `POST`
    public static let post: HTTPMethod = "POST"
    /// `PUT`
    public static let put: HTTPMethod = "PUT"
    /// `PATCH`
    public static let patch: HTTPMethod = "PATCH"
    /// `DELETE`
    public static let delete: HTTPMethod = "DELETE"
    /// `HEAD`
    public static let head: HTTPMethod = "HEAD"
    /// `OPTIONS`
    public static let options: HTTPMethod = "OPTIONS"
    /// `TRACE`: a diagnostic an API client does not send; by name (`"TRACE"`) if ever needed.
    package static let trace: HTTPMethod = "TRACE"

    /// The methods whose requests have the same effect sent once or many times (RFC 9110 §9.2.2).
    public static let idempotent: Set<HTTPMethod> = [.get, .head, .put, .delete, .options, .trace]

    /// Whether repeating the request has the same effect as sending it once.
    package var isIdempotent: Bool { Self.idempotent.contains(self) }
}
