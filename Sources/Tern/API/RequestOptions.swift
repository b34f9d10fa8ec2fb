import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Settings for one request that override the API's.
///
/// ```swift
/// request(route: get(endpoint: "/report"), options: RequestOptions(timeout: 2.5, responseQueue: .global()))
/// ```
public struct RequestOptions: Sendable {
    /// Seconds the request may take, from sending to the end of the response.
    public var timeout: TimeInterval?
    /// The cache policy.
    public var cachePolicy: URLRequest.CachePolicy?
    /// Where the promise's callbacks run by default.
    public var responseQueue: DispatchQueue?
    /// Which responses count as success.
    public var validation: Validation?
    /// The parser for this request's body and error body.
    public var parser: (any ResponseParser)?

    /// Creates options; what is left `nil` comes from the API.
    public init(
        timeout: TimeInterval? = nil,
        cachePolicy: URLRequest.CachePolicy? = nil,
        responseQueue: DispatchQueue? = nil,
        validation: Validation? = nil,
        parser: (any ResponseParser)? = nil
    ) {
        self.timeout = timeout
        self.cachePolicy = cachePolicy
        self.responseQueue = responseQueue
        self.validation = validation
        self.parser = parser
    }
}
