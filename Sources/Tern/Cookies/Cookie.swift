import Foundation

/// A cookie a server set, as a ``CookieJar`` keeps it (RFC 6265bis, section 5.7).
public struct Cookie: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The cookie's name.
    public let name: String
    /// The cookie's value.
    public let value: String
    /// The host it goes to, or the domain whose hosts it goes to; lower-case, no leading dot.
    public let domain: String
    /// Whether it goes to ``domain`` alone, not to its subdomains: set without a `Domain`
    /// attribute.
    package let isHostOnly: Bool
    /// The path it goes to, and the paths under it.
    public let path: String
    /// When it expires; `nil` for a cookie that lasts as long as the jar.
    public let expires: Date?
    /// Whether it goes over `https` only.
    public let isSecure: Bool
    /// Whether the server marked it `HttpOnly` (scripts could not read it in a browser).
    package let isHTTPOnly: Bool
    /// When it was first set: older cookies go first among those of one path length.
    let created: Date
    /// When it was set again in place of the one first set at ``created``, if it was. (Optional
    /// so that a jar's file written before it was kept still reads.)
    let setAgain: Date?

    /// When it was last set: the least recently set go first when a jar is full.
    var lastSet: Date { setAgain ?? created }

    /// The cookie and its attributes, as text.
    public var description: String { "\(name)=\(value); Domain=\(domain)\(isHostOnly ? " (host only)" : ""); Path=\(path)" }

    /// Whether it goes with a request to `url` at `now` (RFC 6265bis, section 5.8.3).
    func goes(to host: String, path requestPath: String, isSecure secureRequest: Bool, at now: Date) -> Bool {
        if let expires, expires <= now { return false }
        if isSecure, !secureRequest { return false }
        guard isHostOnly ? host == domain : Self.host(host, matches: domain) else { return false }
        return Self.path(requestPath, matches: path)
    }

    /// Whether `other` would take this one's place or shadow it: the same name, for a domain
    /// within or around this one's, on a path under this one's (section 5.7, step 16).
    func isShadowed(by other: Cookie) -> Bool {
        name == other.name && (Self.host(domain, matches: other.domain) || Self.host(other.domain, matches: domain))
            && Self.path(other.path, matches: path)
    }

    /// Section 5.1.3: the same host, or one under the domain (never an IP address under one).
    static func host(_ host: String, matches domain: String) -> Bool {
        host == domain || (host.hasSuffix("." + domain) && !isIPAddress(host))
    }

    /// Section 5.1.4: the same path, or one under the cookie's. Octet by octet, as browsers
    /// compare them: `String`'s own comparison takes `é` and `e` with a combining accent for one.
    static func path(_ requestPath: String, matches cookiePath: String) -> Bool {
        let (request, cookie) = (requestPath.utf8, cookiePath.utf8)
        guard request.starts(with: cookie) else { return false }
        return request.count == cookie.count || cookie.last == UInt8(ascii: "/")
            || request.dropFirst(cookie.count).first == UInt8(ascii: "/")
    }

    /// The path of `url` that cookies' paths are matched against: as the request writes it,
    /// percent-encoded (section 5.1.4 takes the request URI's), `/` when it has none. Decoded,
    /// a request to `/%61dmin` would carry the cookies of `/admin`, which browsers do not send it.
    /// Without its `.` and `..` segments, as libcurl sends it: `/admin/../public` is `/public`.
    static func requestPath(of url: URL) -> String {
        let path = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? url.path
        return path.isEmpty ? "/" : removingDotSegments(path)
    }

    /// `path`, absolute, without its `.` and `..` segments (RFC 3986, section 5.2.4).
    static func removingDotSegments(_ path: String) -> String {
        guard path.contains(".") else { return path }
        var kept: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        for (index, segment) in zip(segments.indices, segments) {
            let isLast = index == segments.indices.last
            switch segment {
            case ".":
                if isLast { kept.append("") }
            case "..":
                _ = kept.popLast()
                if isLast { kept.append("") }
            default:
                kept.append(segment)
            }
        }
        return "/" + kept.joined(separator: "/")
    }

    /// Whether `host` is an IPv4 or IPv6 address rather than a name.
    static func isIPAddress(_ host: String) -> Bool {
        host.contains(":") || (!host.isEmpty && host.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") })
    }

    /// Section 5.1.4: the directory of the request's path, the default path of a cookie set
    /// without one.
    static func defaultPath(of requestPath: String) -> String {
        guard requestPath.hasPrefix("/"), let slash = requestPath.lastIndex(of: "/"), slash != requestPath.startIndex else { return "/" }
        return String(requestPath[..<slash])
    }
}

extension Cookie {
    /// The longest a cookie may last, from when it is set (RFC 6265bis: 400 days).
    static let longestLife: TimeInterval = 400 * 24 * 3600
    /// The most bytes of a cookie's name and value together (section 5.6).
    static let longestNameAndValue = 4096
    /// The most bytes of an attribute's value; a longer one is ignored (section 5.6).
    static let longestAttributeValue = 1024

    /// What one `Set-Cookie` field sets, read as RFC 6265bis section 5.6 says (the domain and the
    /// store's rules come after, in ``CookieJar``); `nil` when the field is to be ignored: it
    /// holds a control character, or has no name, or its name and value are too long, or it
    /// lacks what its name's prefix asks, or it is `SameSite=None` without `Secure`.
    init?(parsing field: String, host: String, path requestPath: String, now: Date) {
        // Control characters other than HTAB make the whole field ignored: CR, VT and DEL too.
        guard !field.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) else { return nil }
        var attributes = field.split(separator: ";", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        let pair = attributes.removeFirst()
        guard let equals = pair.firstIndex(of: "=") else { return nil }
        let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
        let value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, name.utf8.count + value.utf8.count <= Self.longestNameAndValue else { return nil }

        var domain: String?
        var path: String?
        var expires: Date?
        var maxAge: Date?
        var isSecure = false
        var isHTTPOnly = false
        var isCrossSite = false
        for attribute in attributes {
            let parts = attribute.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = parts[0].trimmingCharacters(in: .whitespaces).lowercased()
            let argument = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
            // An attribute too long is ignored, not the cookie: a Domain of 1,100 octets leaves it host-only.
            guard argument.utf8.count <= Self.longestAttributeValue else { continue }
            switch key {
            case "expires":
                if let date = CookieDate.parse(argument) { expires = date }
            case "max-age":
                // Digits, with an optional leading minus; zero or less expires it at once.
                let digits = argument.hasPrefix("-") ? argument.dropFirst() : Substring(argument)
                guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { continue }
                let seconds = argument.hasPrefix("-") ? 0 : min(Double(digits) ?? .infinity, Self.longestLife)
                maxAge = seconds <= 0 ? .distantPast : now.addingTimeInterval(seconds)
            case "domain":
                guard !argument.isEmpty else { continue }
                domain = (argument.hasPrefix(".") ? String(argument.dropFirst()) : argument).lowercased()
            case "path":
                path = argument.hasPrefix("/") ? argument : nil
            case "secure":
                isSecure = true
            case "httponly":
                isHTTPOnly = true
            case "samesite":
                isCrossSite = argument.lowercased() == "none"
            default:
                continue
            }
        }
        // Browsers ignore a cookie that lacks what its name's prefix asks, and one `SameSite=None`
        // that is not `Secure` (section 5.7).
        guard Self.meetsItsPrefix(name, isSecure: isSecure, domain: domain, path: path), !isCrossSite || isSecure else { return nil }
        self.name = name
        self.value = value
        // Max-Age wins over Expires; neither lasts past 400 days.
        self.expires = (maxAge ?? expires).map { min($0, now.addingTimeInterval(Self.longestLife)) }
        self.domain = domain ?? host
        isHostOnly = domain == nil
        self.path = path ?? Self.defaultPath(of: requestPath)
        self.isSecure = isSecure
        self.isHTTPOnly = isHTTPOnly
        created = now
        setAgain = nil
    }

    /// Whether a cookie of this name, with these attributes as the server wrote them, has what
    /// its name's prefix asks, in any case (section 4.1.3): `__Secure-` is `Secure`; `__Host-`
    /// is `Secure`, with `Path=/` and no `Domain` at all, not even the host's own.
    private static func meetsItsPrefix(_ name: String, isSecure: Bool, domain: String?, path: String?) -> Bool {
        let name = name.lowercased()
        if name.hasPrefix("__secure-") { return isSecure }
        if name.hasPrefix("__host-") { return isSecure && domain == nil && path == "/" }
        return true
    }

    /// The same cookie for another domain, host-only.
    func hostOnly(for host: String) -> Cookie {
        Cookie(name: name, value: value, domain: host, isHostOnly: true, path: path, expires: expires,
               isSecure: isSecure, isHTTPOnly: isHTTPOnly, created: created, setAgain: setAgain)
    }

    /// The same cookie, set now again in place of one first set at `date`.
    func replacing(oneCreatedAt date: Date) -> Cookie {
        Cookie(name: name, value: value, domain: domain, isHostOnly: isHostOnly, path: path, expires: expires,
               isSecure: isSecure, isHTTPOnly: isHTTPOnly, created: date, setAgain: lastSet)
    }
}
