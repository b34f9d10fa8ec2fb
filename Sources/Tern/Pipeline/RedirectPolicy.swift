import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which redirects a request follows. Tern follows them itself, one hop at a time through its
/// own pipeline: plugins see every hop, the delegate signs every hop that stays at the
/// request's origin, and the timeout spans them all.
///
/// The default follows 301, 302, 303, 307 and 308 responses that have a `Location`, at most 10
/// in a row, then fails with ``APIError/redirectFailed(_:)``. 303 (and 301 or 302 after a POST)
/// continues as a GET without a body; 307 and 308 keep the method and the body.
///
/// Credentials stay at their origin (scheme, host and port): once a redirect leaves it,
/// `Authorization`, `Proxy-Authorization`, `Cookie` and the `sensitiveHeaders` are dropped
/// and stay dropped for the rest of the chain, even if it comes back, and the delegate neither
/// signs nor refreshes for it. A redirect from https to http fails unless
/// `allowsInsecureRedirects` says otherwise. The configuration's `sensitiveHeaders` (and, for
/// its request, a request's own policy's) are credentials to the rest of Tern too:
/// ``LoggerPlugin`` redacts them, a recording hides them, and a cache serves what they fetched
/// only to requests that send the same values.
///
/// ```swift
/// APIConfiguration(redirectPolicy: RedirectPolicy(maximumRedirects: 3, sensitiveHeaders: ["X-Api-Key"]))
/// RequestOptions(redirectPolicy: .never)   // the 3xx is the response
/// RedirectPolicy { redirect in redirect.isCrossOrigin ? .doNotFollow : .follow }
/// ```
public struct RedirectPolicy: Sendable {
    /// The most redirects one request follows; the next one fails.
    package var maximumRedirects: Int
    /// Whether a redirect from https to http is followed; by default it fails.
    package var allowsInsecureRedirects: Bool
    /// Headers dropped on leaving the origin, besides `Authorization`, `Proxy-Authorization` and
    /// `Cookie`; names match whatever their case.
    package var sensitiveHeaders: Set<String>
    /// Decides each redirect the rules above allow: follow it, or take the 3xx as the response.
    package var decide: (@Sendable (Redirect) -> Redirect.Decision)?
    /// Whether redirects are followed at all: only ``never`` says no.
    var follows = true

    /// Creates a policy that follows redirects; every default is the one described above.
    public init(
        maximumRedirects: Int = 10,
        allowsInsecureRedirects: Bool = false,
        sensitiveHeaders: Set<String> = [],
        decide: (@Sendable (Redirect) -> Redirect.Decision)? = nil
    ) {
        self.maximumRedirects = maximumRedirects
        self.allowsInsecureRedirects = allowsInsecureRedirects
        self.sensitiveHeaders = sensitiveHeaders
        self.decide = decide
    }

    /// Follows at most 10 redirects, keeping credentials at their origin.
    public static let follow = RedirectPolicy()

    /// Follows none: a 3xx is the response, and validation decides whether it is accepted.
    public static let never: RedirectPolicy = {
        var policy = RedirectPolicy()
        policy.follows = false
        return policy
    }()
}
