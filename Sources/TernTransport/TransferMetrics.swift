import Foundation

/// What one exchange did on the wire, as its transport measured it: when each step ended,
/// counted from the exchange's start, what went each way, and on what connection.
///
/// ``CurlTransport`` reports every field it can; URLSession reports them on Apple platforms
/// and not at all on Linux (FoundationNetworking collects no metrics). A step that did not
/// happen, such as TLS over plain HTTP or a lookup on a reused connection, is `nil` or 0.
public struct TransferMetrics: Sendable, Equatable {
    /// The URL the exchange went to.
    public var url: URL?
    /// The response's status, when a head came.
    public var statusCode: Int?
    /// Seconds to the host name resolved.
    public var nameLookup: TimeInterval?
    /// Seconds to the connection made.
    public var connect: TimeInterval?
    /// Seconds to the TLS handshake done, for HTTPS.
    public var tlsHandshake: TimeInterval?
    /// Seconds to the first byte of the response.
    public var firstByte: TimeInterval?
    /// Seconds to the end of the exchange.
    public var total: TimeInterval?
    /// The request body's bytes sent.
    public var bytesSent: Int64
    /// The response body's bytes received, as they came (compressed, if they were).
    public var bytesReceived: Int64
    /// Whether the exchange went on a connection an earlier one had opened, when known.
    public var reusedConnection: Bool?
    /// The protocol, such as "HTTP/1.1" or "HTTP/2", when known.
    public var httpVersion: String?
    /// What the API's ``HTTPCache`` did, if it has one; users read it as `Response.cacheOutcome`.
    package var cacheOutcome: CacheOutcome?

    /// Creates metrics.
    public init(url: URL? = nil, statusCode: Int? = nil, nameLookup: TimeInterval? = nil, connect: TimeInterval? = nil,
                tlsHandshake: TimeInterval? = nil, firstByte: TimeInterval? = nil, total: TimeInterval? = nil,
                bytesSent: Int64 = 0, bytesReceived: Int64 = 0, reusedConnection: Bool? = nil, httpVersion: String? = nil,
                cacheOutcome: CacheOutcome? = nil) {
        self.url = url
        self.statusCode = statusCode
        self.nameLookup = nameLookup
        self.connect = connect
        self.tlsHandshake = tlsHandshake
        self.firstByte = firstByte
        self.total = total
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
        self.reusedConnection = reusedConnection
        self.httpVersion = httpVersion
        self.cacheOutcome = cacheOutcome
    }
}
