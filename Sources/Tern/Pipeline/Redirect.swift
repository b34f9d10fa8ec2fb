import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A redirect about to be followed, as a ``RedirectPolicy``'s `decide` closure sees it.
public struct Redirect: Sendable {
    /// Whether to follow a redirect.
    public enum Decision: Sendable {
        /// Send the next request.
        case follow
        /// Stop here: the 3xx is the response.
        case doNotFollow
    }

    /// The request that was redirected, as it was sent.
    public let request: URLRequest
    /// The 3xx response.
    public let response: HTTPURLResponse
    /// Where it leads: the `Location`, resolved against the redirected request's URL.
    public let target: URL
    /// Which redirect of the request this is, from 1.
    public let number: Int
    /// Whether the chain has left the origin (scheme, host and port) of the request's first
    /// URL by this redirect or an earlier one: credentials are no longer sent.
    public let isCrossOrigin: Bool
}
