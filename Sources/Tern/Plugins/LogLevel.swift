/// How much an API logs about its requests, from nothing to everything (KiNetworking's levels).
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    /// Nothing.
    case none
    /// Each request's method and URL.
    case request
    /// Requests, and each response's status, duration and size.
    case response
    /// Requests and responses with their headers and bodies.
    case verbose

    /// Whether `lhs` prints less than `rhs`.
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}
