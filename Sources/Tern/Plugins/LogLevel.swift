/// How much a ``LoggerPlugin`` prints about each request (KiNetworking's levels).
public enum LogLevel: Int, Sendable {
    /// Each request's method and URL.
    case request = 1
    /// Requests, and each response's status, duration and size.
    case response
    /// Requests and responses with their headers and bodies.
    case verbose

    /// Whether `lhs` prints at least as much as `rhs`.
    package static func >= (lhs: LogLevel, rhs: LogLevel) -> Bool {
        lhs.rawValue >= rhs.rawValue
    }
}
