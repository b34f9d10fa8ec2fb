import Foundation

/// How a ``RecordingTransport`` matches a request to a recorded one, and what it keeps out of
/// its file.
///
/// A request matches a recorded one with the same method and URL, query items in any order but
/// those of one name in theirs; naming headers, or asking for the body, makes the match stricter. Bodies are compared as
/// values when both are JSON (`{"a": 1, "b": 2}` matches `{"b":2,"a":1}`), as fields when both
/// are forms, and byte for byte otherwise.
///
/// `Authorization`, `Proxy-Authorization`, `Cookie` and `Set-Cookie` never reach the file; nor do
/// the values of the `secrets` named, and of OAuth's and OpenID's `access_token`,
/// `refresh_token`, `id_token`, `client_secret` and `code_verifier` and of `password`, named or
/// not: a header, a query item, a form or JSON field (at any depth, in requests and responses)
/// of that name, in any case. Each is written as
/// `[redacted]`, which matches any value on replay, and a value once hidden is hidden wherever
/// else it appears.
///
/// ```swift
/// let options = RecordingOptions(matchedHeaders: ["Accept"], matchesBody: true, secrets: ["api_key", "session_token"])
/// ```
public struct RecordingOptions: Sendable {
    /// Headers a request must carry with their recorded values to match (names in any case).
    package var matchedHeaders: [String]
    /// Whether a request's body must match its recorded one.
    package var matchesBody: Bool
    /// Names whose values are written as `[redacted]`, in any case: headers, query items, form
    /// fields and JSON fields.
    package var secrets: [String]

    /// Creates options; by default, method and URL are matched, and the credentials HTTP names
    /// and the well-known secrets (OAuth's tokens, a password) are hidden.
    ///
    /// - Parameters:
    ///   - matchedHeaders: Headers a request must carry with their recorded values to match
    ///     (names in any case).
    ///   - matchesBody: Whether a request's body must match its recorded one.
    ///   - secrets: Names whose values are written as `[redacted]`, in any case: headers, query
    ///     items, form fields and JSON fields.
    public init(matchedHeaders: [String] = [], matchesBody: Bool = false, secrets: [String] = []) {
        self.matchedHeaders = matchedHeaders
        self.matchesBody = matchesBody
        self.secrets = secrets
    }
}
