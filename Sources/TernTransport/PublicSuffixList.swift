import CTernCurl

/// The public suffix list, from the system's libpsl where it can be loaded: what the cookie jar
/// asks before it lets a host set a cookie for a domain. Here, beside the C shim that loads
/// libpsl, so that `Tern` reaches no C of its own.
package enum PublicSuffixList {
    /// Whether the list could be loaded.
    package static let isAvailable = tern_psl_load() == 1

    /// Whether `host` may set a cookie for `domain`: `domain` is `host` or a parent of it, and
    /// no public suffix. Without the list, only for `host` itself.
    package static func acceptsCookie(from host: String, for domain: String) -> Bool {
        guard isAvailable, let host = listed(host), let domain = listed(domain) else { return false }
        return tern_psl_cookie_domain_acceptable(host, domain) == 1
    }

    /// Whether `domain` is a public suffix; every domain is, without the list.
    package static func isPublicSuffix(_ domain: String) -> Bool {
        guard isAvailable, let domain = listed(domain) else { return true }
        return tern_psl_is_public_suffix(domain) == 1
    }

    /// `name` as the list spells it: without the root's dot, which libpsl does not take away
    /// ("co.uk." is no suffix it knows, so "evil.co.uk." could set cookies for every
    /// "….co.uk."); `nil` for a name it cannot judge (empty, or not ASCII).
    static func listed(_ name: String) -> String? {
        let name = name.hasSuffix(".") ? String(name.dropLast()) : name
        return name.isEmpty || !name.allSatisfy(\.isASCII) ? nil : name
    }
}
