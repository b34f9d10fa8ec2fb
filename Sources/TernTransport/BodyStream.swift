import Foundation

/// A request body read from a stream, made anew for each attempt: a retry, a replay after a
/// credential refresh, or a 307 or 308 redirect reads the body again from the start.
///
/// ```swift
/// BodyStream(length: size) { InputStream(url: recording)! }
/// ```
public struct BodyStream: Sendable, Equatable {
    /// The body's length in bytes, when known: progress reports it as the total to send.
    public let length: Int64?
    private let make: @Sendable () throws -> InputStream
    /// What tells two bodies apart: streams cannot be compared, their makers can be told apart.
    private let identity = Identity()

    /// Creates a body from a maker of streams, called once per attempt; each stream it makes
    /// must read the same bytes from the start.
    public init(length: Int64? = nil, makeStream: @escaping @Sendable () throws -> InputStream) {
        self.length = length
        make = makeStream
    }

    /// A new stream of the body, unopened.
    public func makeStream() throws -> InputStream {
        try make()
    }

    /// Whether both are the same body, made by the same maker.
    public static func == (lhs: BodyStream, rhs: BodyStream) -> Bool {
        lhs.identity === rhs.identity
    }

    private final class Identity: Sendable {}
}
