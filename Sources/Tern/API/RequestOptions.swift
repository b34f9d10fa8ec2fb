import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Settings for one request that override the API's.
///
/// ```swift
/// let report: Promise<Data> = client.request(route: .get("/report"), options: RequestOptions(timeout: 2.5, responseQueue: .global()))
/// ```
public struct RequestOptions: Sendable {
    /// Headers for this request alone, over the configuration's common headers; the parameters'
    /// own headers and the delegate's come after, and win.
    package var headers: HTTPHeaders
    /// Seconds the request may take in all, retries and refresh included, from sending to the
    /// end of the last response.
    package var timeout: TimeInterval?
    /// The longest an attempt goes with no byte moving either way before it is given up.
    package var idleTimeout: TimeInterval?
    /// The cache policy.
    package var cachePolicy: URLRequest.CachePolicy?
    /// The largest response body this request takes into memory, after decompression.
    package var maximumResponseSize: SizeLimit?
    /// Where the promise's callbacks run by default.
    @usableFromInline package var responseQueue: DispatchQueue?
    /// Which responses count as success.
    package var validation: Validation?
    /// The parser for this request's body and error body.
    package var parser: (any ResponseParser)?
    /// When this request is sent again after a failure.
    package var retryPolicy: RetryPolicy?
    /// Which redirects this request follows.
    package var redirectPolicy: RedirectPolicy?
    /// Whether the delegate signs this request and refreshes credentials for it. Send the
    /// refresh call itself with `false`, so that it does not wait for the refresh it is part of.
    package var authenticates: Bool
    /// Plugins for this request, after the API's.
    package var plugins: [any Plugin]
    /// What this request answers when its API answers with sample data
    /// (``APIConfiguration``'s `usesSampleData`); ignored otherwise.
    package var sampleData: SampleData?
    /// What this request asks of the API's ``HTTPCache`` (and any cache on the way), sent as its
    /// `Cache-Control`; none by default.
    package var cacheDirectives: CacheDirectives?
    /// For a stream (each connection of an event source too): the bytes that may wait for its
    /// reader before the transfer pauses until the reader has taken half of them; 1 MiB by default.
    package var streamBufferSize: Int
    /// For a stream (each connection of an event source too): how long no byte may come, and
    /// the reader take none, before it ends with ``APIError/timeout(_:)``; 60 s by default.
    package var streamIdleTimeout: TimeInterval
    /// For a stream (each connection of an event source too): the longest it runs after its
    /// head, whatever comes, before it ends with ``APIError/timeout(_:)``; no limit by default.
    package var streamMaximumDuration: TimeInterval

    /// Creates options; what is left `nil` comes from the API.
    ///
    /// - Parameters:
    ///   - headers: Headers for this request alone, over the configuration's common headers
    ///     (`["Idempotency-Key": key]`); the parameters' own headers and the delegate's win.
    ///   - timeout: Seconds the request may take in all, retries and refresh included, from
    ///     sending to the end of the last response.
    ///   - idleTimeout: Seconds an attempt may go with no byte sent or received, instead of the
    ///     API's (see ``APIConfiguration``).
    ///   - cachePolicy: The cache policy.
    ///   - maximumResponseSize: The largest response body this request takes into memory,
    ///     after decompression.
    ///   - responseQueue: Where the promise's callbacks run by default.
    ///   - validation: Which responses count as success.
    ///   - parser: The parser for this request's body and error body.
    ///   - retryPolicy: When this request is sent again after a failure.
    ///   - redirectPolicy: Which redirects this request follows; the configuration's sensitive
    ///     headers stay sensitive, whatever its own.
    ///   - authenticates: Whether the delegate signs this request and refreshes credentials
    ///     for it; send the refresh call itself with `false`.
    ///   - plugins: Plugins for this request, after the API's.
    ///   - sampleData: What this request answers when its API answers with sample data.
    ///   - cacheDirectives: What this request asks of the API's ``HTTPCache`` (and any cache on
    ///     the way), sent as its `Cache-Control`.
    ///   - streamBufferSize: For a stream (each connection of an event source too): the bytes
    ///     that may wait for its reader before the transfer pauses; 1 MiB by default.
    ///   - streamIdleTimeout: For a stream: how long no byte may come, and the reader take none,
    ///     before it ends with ``APIError/timeout(_:)``; 60 s by default.
    ///   - streamMaximumDuration: For a stream: the longest it runs after its head before it
    ///     ends with ``APIError/timeout(_:)``; no limit by default.
    public init(
        headers: HTTPHeaders = [:],
        timeout: TimeInterval? = nil,
        idleTimeout: TimeInterval? = nil,
        cachePolicy: URLRequest.CachePolicy? = nil,
        maximumResponseSize: SizeLimit? = nil,
        responseQueue: DispatchQueue? = nil,
        validation: Validation? = nil,
        parser: (any ResponseParser)? = nil,
        retryPolicy: RetryPolicy? = nil,
        redirectPolicy: RedirectPolicy? = nil,
        authenticates: Bool = true,
        plugins: [any Plugin] = [],
        sampleData: SampleData? = nil,
        cacheDirectives: CacheDirectives? = nil,
        streamBufferSize: Int = 1 << 20,
        streamIdleTimeout: TimeInterval = 60,
        streamMaximumDuration: TimeInterval = .infinity
    ) {
        self.headers = headers
        self.timeout = timeout
        self.idleTimeout = idleTimeout
        self.cachePolicy = cachePolicy
        self.maximumResponseSize = maximumResponseSize
        self.responseQueue = responseQueue
        self.validation = validation
        self.parser = parser
        self.retryPolicy = retryPolicy
        self.redirectPolicy = redirectPolicy
        self.authenticates = authenticates
        self.plugins = plugins
        self.sampleData = sampleData
        self.cacheDirectives = cacheDirectives
        self.streamBufferSize = streamBufferSize
        self.streamIdleTimeout = streamIdleTimeout
        self.streamMaximumDuration = streamMaximumDuration
    }

    /// Whether a request with these options resolves every setting its pipeline reads
    /// (``RequestContext``) as its API does, so that it may share the API's.
    var changesNoSetting: Bool {
        headers.isEmpty && timeout == nil && idleTimeout == nil && cachePolicy == nil && maximumResponseSize == nil && validation == nil
            && parser == nil && retryPolicy == nil && redirectPolicy == nil && authenticates && plugins.isEmpty
            && sampleData == nil && cacheDirectives == nil
    }
}
