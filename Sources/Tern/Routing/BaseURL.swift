import TernCore

/// A base URL read once, with the API: what joining a route to it, and checking the result,
/// would otherwise find out again at every request.
struct BaseURL: Sendable {
    /// As configured.
    let string: String
    /// Whether it has a scheme: a relative route joined to it is then absolute.
    let hasScheme: Bool
    /// Whether a relative endpoint with no query or fragment joins it into a URL with an HTTP
    /// scheme in lowercase and a host, unchecked: it has both itself, and no query or fragment, so the
    /// endpoint goes after its path, past its host.
    private let joinsChecked: Bool

    init(_ string: String) {
        self.string = string
        hasScheme = AbsoluteURL.hasScheme(string)
        joinsChecked = AbsoluteURL.hasSchemeAndHost(string) && AbsoluteURL.hasHTTPScheme(string) && AbsoluteURL.lowercasingScheme(string) == string
            && !EndpointJoining.containsQueryOrFragment(string)
    }

    /// `endpoint`, relative, joined to this URL (see ``EndpointJoining``), and whether the result
    /// is known to have an HTTP scheme in lowercase and a host.
    func joined(_ endpoint: String) -> (url: String, isChecked: Bool) {
        if joinsChecked, !EndpointJoining.containsQueryOrFragment(endpoint) {
            return (EndpointJoining.joinedPaths(string, endpoint), true)
        }
        return (EndpointJoining.join(base: string, endpoint: endpoint), false)
    }
}
