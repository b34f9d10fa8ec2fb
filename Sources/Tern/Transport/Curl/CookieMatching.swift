#if os(Linux)
import Foundation
import FoundationNetworking

extension HTTPCookie {
    /// Whether the cookie goes with a request for `url` (RFC 6265, section 5.4), beyond the
    /// domain a storage matches already: FoundationNetworking's storage hands out a host's
    /// cookies whatever their path, `Secure` flag or expiry.
    func goes(to url: URL, at now: Date) -> Bool {
        if isSecure, url.scheme?.lowercased() != "https" { return false }
        if let expiresDate, expiresDate <= now { return false }
        return Self.path(url.path.isEmpty ? "/" : url.path, matches: path.isEmpty ? "/" : path)
    }

    /// RFC 6265, section 5.1.4: the same path, or one under the cookie's.
    static func path(_ requestPath: String, matches cookiePath: String) -> Bool {
        guard requestPath.hasPrefix(cookiePath) else { return false }
        return requestPath.count == cookiePath.count || cookiePath.hasSuffix("/")
            || requestPath.dropFirst(cookiePath.count).first == "/"
    }
}
#endif
