import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One stop of a request's redirect chain: the request for its URL as built (before adapters
/// and the delegate, so that retries and replays after a refresh start from it again), and
/// where the chain has been.
struct Leg: Sendable {
    /// The request for this stop, unadapted and unsigned.
    var request: TransportRequest
    /// The request's first URL, whose origin is where its credentials belong.
    private let firstURL: URL?
    /// How many redirects led here.
    var redirects = 0
    /// Whether the chain has left ``origin``: from then on no credential goes out and the
    /// delegate signs nothing, even if the chain comes back.
    var hasLeftOrigin = false

    /// The first stop of a request.
    init(_ request: TransportRequest) {
        self.request = request
        firstURL = request.urlRequest.url
    }

    /// Where the request's credentials belong; worked out only when it is redirected.
    var origin: Origin? { firstURL.flatMap(Origin.init) }

    /// `url` carrying the first URL's user and password when it names none of its own: a hop
    /// that stays at the origin keeps that credential, as it keeps `Authorization`, however
    /// its `Location` is written (an absolute one has no user of its own).
    func withFirstURLsUserInfo(_ url: URL) -> URL {
        guard url.user == nil, url.password == nil, let firstURL, firstURL.user != nil || firstURL.password != nil,
              let first = URLComponents(url: firstURL, resolvingAgainstBaseURL: true),
              var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return url }
        components.percentEncodedUser = first.percentEncodedUser
        components.percentEncodedPassword = first.percentEncodedPassword
        return components.url ?? url
    }

    /// Removes the credentials a request must not carry here: none at the origin, else
    /// `Authorization`, `Proxy-Authorization`, `Cookie` and the policy's sensitive headers.
    func removeCredentials(from request: inout URLRequest, policy: RedirectPolicy) {
        guard hasLeftOrigin, let fields = request.allHTTPHeaderFields else { return }
        let sensitive = TransportRequest.credentialNames(policy.sensitiveHeaders)
        for name in fields.keys where sensitive.contains(name.lowercased()) {
            request.setValue(nil, forHTTPHeaderField: name)
        }
    }
}

/// Where a URL's credentials belong: scheme, host and port, as browsers compare them.
struct Origin: Hashable, Sendable {
    let scheme: String
    let host: String
    let port: Int

    init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), let host = url.canonicalHost else { return nil }
        self.scheme = scheme
        self.host = host
        port = url.port ?? (scheme == "https" ? 443 : 80)
    }
}
