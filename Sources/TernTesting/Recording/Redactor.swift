import Foundation
import Tern

/// Keeps secrets out of a recording: the credentials HTTP names and the values of the names a
/// test gives are written as ``placeholder``; each value hidden is remembered, and hidden
/// wherever else it appears later (a token a response issued, echoed in a URL or a body).
struct Redactor: Sendable {
    /// What a hidden value is written as; on replay it matches any value.
    static let placeholder = "[redacted]"
    /// Values shorter than this are hidden where they are named, not searched for elsewhere.
    private static let shortestSearched = 6
    private static let credentials: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]
    /// Names hidden whether or not a test names them: those OAuth 2 (RFC 6749, RFC 7636) and
    /// OpenID Connect give a token request's credentials and the tokens its answer issues (a
    /// rotated refresh token is never sent as a header, so nothing else would hide it), and a
    /// password.
    static let wellKnownSecrets: Set<String> = ["access_token", "refresh_token", "id_token", "client_secret", "code_verifier", "password"]
    /// The attributes of a `Set-Cookie` field, whose values are no secret.
    private static let cookieAttributes: Set<String> = ["expires", "max-age", "domain", "path", "samesite", "priority"]

    /// Names of fields, query items and JSON members to hide, in lower case (the well-known ones
    /// and a test's): `API_KEY` is as secret as `api_key`, and hiding one a test did not mean
    /// costs it nothing on replay.
    let names: Set<String>
    /// Header names to hide, in lower case.
    private(set) var headerNames: Set<String>
    /// Every value hidden so far, longest first when searched for.
    private(set) var hidden: Set<String> = []

    init(secrets: [String]) {
        names = Set(secrets.map { $0.lowercased() }).union(Self.wellKnownSecrets)
        headerNames = Self.credentials.union(names)
    }

    /// The name of the first of `headers` that this redactor hides and whose value holds
    /// ``placeholder``: a credential that came from a replayed answer, as the file keeps it.
    func headerHoldingPlaceholder(in headers: [String: String]) -> String? {
        headers.sorted { $0.key < $1.key }.first { headerNames.contains($0.key.lowercased()) && $0.value.contains(Self.placeholder) }?.key
    }

    /// Whether a query item, form field or part named `name` holds a secret: one of `names`,
    /// or a field nested in one or holding one, as a form writes a dictionary
    /// (`user[password]`, `password[]`), a JSON member at any depth being hidden too.
    func isSecret(_ name: String) -> Bool {
        let name = name.lowercased()
        return names.contains(name) || (name.contains("[") && name.split(whereSeparator: { $0 == "[" || $0 == "]" }).contains { names.contains(String($0)) })
    }

    /// The values `request` carries that a recording hides (its credentials, the values of the
    /// names in `secrets`), longest first, as they are searched for: hidden in the words of an
    /// error that names it.
    static func values(hiddenIn request: HTTPArchive.Request, secrets: [String]) -> [String] {
        var redactor = Redactor(secrets: secrets)
        var entry = HTTPArchive.Entry(request: request, response: HTTPArchive.Response(status: 0))
        redactor.redact(&entry)
        return searched(redactor.hidden)
    }

    /// `request` as a recording would keep it, with its credentials and the values of the names
    /// in `secrets` hidden: what the words of an error may tell of it.
    static func redacted(_ request: HTTPArchive.Request, secrets: [String]) -> HTTPArchive.Request {
        var redactor = Redactor(secrets: secrets)
        var entry = HTTPArchive.Entry(request: request, response: HTTPArchive.Response(status: 0))
        redactor.redact(&entry)
        return entry.request
    }

    /// A request's target (`/search?pin=…`) with its named query items' values hidden, however
    /// short: what the words of an error may tell of it.
    func hidingNamedItems(inTarget target: String) -> String {
        var redactor = self
        return redactor.redactQuery(target)
    }

    /// A JSON or form body with its named fields' values hidden, however short; any other body
    /// as it is: what the words of an error may quote of it.
    func hidingNamedFields(in body: Data, contentType: String) -> Data {
        var redactor = self
        let text = String(decoding: body, as: UTF8.self)
        let redacted = redactor.redactBody(text, mimeType: contentType)
        return redacted == text ? body : Data(redacted.utf8)
    }

    /// Hides the values of the headers `names` from now on: an API's own credentials
    /// (``TransportRequest/credentialHeaders``), as the request that sends them says.
    mutating func hideHeaders(_ names: Set<String>) {
        headerNames.formUnion(names.lazy.map { $0.lowercased() })
    }

    mutating func redact(_ entry: inout HTTPArchive.Entry) {
        entry.request.headers = entry.request.headers.map { $0.map { redactHeader($0) } }
        entry.response.headers = entry.response.headers.map { $0.map { redactHeader($0) } }
        entry.response.redirectURL = entry.response.redirectURL.map { redactPassword(redactQuery($0)) }
        entry.request.url = redactPassword(redactQuery(entry.request.url))
        entry.request.queryString = entry.request.queryString?.map { isSecret($0.name) ? hide($0) : $0 }
        if let data = entry.request.postData, let text = data.text {
            entry.request.postData?.text = redactBody(kept: text, encoding: data.encoding, mimeType: data.mimeType ?? "")
        }
        if let content = entry.response.content, let text = content.text {
            entry.response.content?.text = redactBody(kept: text, encoding: content.encoding, mimeType: content.mimeType ?? "")
        }
        scrub(&entry)
    }

    /// A field's value hidden, and remembered.
    private mutating func hide(_ field: HTTPArchive.Field) -> HTTPArchive.Field {
        remember(field.value)
        return HTTPArchive.Field(name: field.name, value: Self.placeholder)
    }

    mutating func remember(_ value: String) {
        let value = value.trimmingCharacters(in: .whitespaces)
        guard !value.isEmpty, value != Self.placeholder else { return }
        hidden.formUnion(Self.spellings(of: value))
        // A credential's token alone, as a body or a URL would carry it: `Bearer t0k3n`'s `t0k3n`.
        for word in value.split(separator: " ").dropFirst() where word.count >= Self.shortestSearched {
            hidden.formUnion(Self.spellings(of: String(word)))
        }
    }

    /// A value as text may carry it: as it is, in a JSON string (`\/` for `/`), percent-encoded
    /// in a URL.
    private static func spellings(of value: String) -> Set<String> {
        var spellings: Set<String> = [value, value.replacingOccurrences(of: "/", with: #"\/"#)]
        for allowed in [CharacterSet.alphanumerics, CharacterSet.urlQueryAllowed.subtracting(CharacterSet(charactersIn: "&+=?/"))] {
            if let encoded = value.addingPercentEncoding(withAllowedCharacters: allowed) { spellings.insert(encoded) }
        }
        return spellings
    }

    private mutating func redactHeader(_ field: HTTPArchive.Field) -> HTTPArchive.Field {
        let name = field.name.lowercased()
        guard headerNames.contains(name) else {
            // A redirect's target, with the named query items of its URL hidden, and its password.
            return name == "location" ? HTTPArchive.Field(name: field.name, value: redactPassword(redactQuery(field.value))) : field
        }
        switch name {
        case "cookie":
            // Each cookie's name kept, its value hidden: `a=[redacted]; b=[redacted]`. A nameless
            // cookie (`Set-Cookie: t0k3n`) is sent as its value alone: hidden whole.
            let cookies = field.value.split(separator: ";").map { pair -> String in
                let parts = pair.split(separator: "=", maxSplits: 1)
                remember(String(parts.count == 2 ? parts[1] : pair))
                return parts.count == 2 ? parts[0].trimmingCharacters(in: .whitespaces) + "=" + Self.placeholder : Self.placeholder
            }
            return HTTPArchive.Field(name: field.name, value: cookies.joined(separator: "; "))
        case "set-cookie":
            // Each cookie's name and attributes kept: `session=[redacted]; Path=/; HttpOnly`; a
            // field joined from several (as URLSession joins them) holds several. A nameless
            // cookie is its value alone. The value of a cookie the server deletes (PHP's
            // `deleted`) is no credential: hidden here, but not searched for, or every answer
            // saying `deleted` would replay otherwise.
            let cookies = SetCookieFields.split(field.value).map { cookie -> String in
                let searched = !Self.deletesItself(cookie)
                let segments = cookie.split(separator: ";", omittingEmptySubsequences: false).enumerated().map { index, segment -> String in
                    let pair = segment.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    if index == 0, pair.count == 1 {
                        if searched { remember(String(segment)) }
                        return Self.placeholder
                    }
                    guard pair.count == 2, index == 0 || !Self.cookieAttributes.contains(pair[0].trimmingCharacters(in: .whitespaces).lowercased()) else {
                        return String(segment)
                    }
                    if searched { remember(String(pair[1])) }
                    return pair[0] + "=" + Self.placeholder
                }
                return segments.joined(separator: ";")
            }
            return HTTPArchive.Field(name: field.name, value: cookies.joined(separator: ", "))
        default:
            return hide(field)
        }
    }

    /// Whether a `Set-Cookie` field deletes its cookie: `Max-Age` of zero or less, or an
    /// `Expires` gone by.
    private static func deletesItself(_ field: String) -> Bool {
        field.split(separator: ";").dropFirst().contains { attribute in
            let parts = attribute.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { return false }
            switch parts[0].lowercased() {
            case "max-age": return parts[1].hasPrefix("-") || Int(parts[1]) == 0
            case "expires": return CookieDate.parse(parts[1]).map { $0 < Date() } ?? false
            default: return false
            }
        }
    }

    /// A URL with the named items of its query hidden, and of its fragment where it is written
    /// as a form (OAuth's implicit grant: `/cb#access_token=…&token_type=bearer`).
    private mutating func redactQuery(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return url }
        let encoded = Self.placeholder.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? Self.placeholder
        var changed = false
        if let items = components.percentEncodedQueryItems,
           items.contains(where: { isSecret($0.name.removingPercentEncoding ?? $0.name) }) {
            components.percentEncodedQueryItems = items.map { item in
                guard isSecret(item.name.removingPercentEncoding ?? item.name) else { return item }
                remember(item.value?.removingPercentEncoding ?? "")
                return URLQueryItem(name: item.name, value: encoded)
            }
            changed = true
        }
        if let fragment = components.percentEncodedFragment, fragment.contains("=") {
            let pairs = fragment.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(parts[0])
                guard parts.count == 2, isSecret(name.removingPercentEncoding ?? name) else { return String(pair) }
                remember(String(parts[1]).removingPercentEncoding ?? String(parts[1]))
                changed = true
                return name + "=" + encoded
            }
            components.percentEncodedFragment = pairs.joined(separator: "&")
        }
        return changed ? components.string ?? url : url
    }

    /// A URL with its credential hidden: the password (`https://user:password@host`), or the
    /// user where no password follows it, which is then the key itself (`https://sk_live_…@host`,
    /// `https://key:@host`, as Stripe and GitHub take one).
    private mutating func redactPassword(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return url }
        let placeholder = Self.placeholder.addingPercentEncoding(withAllowedCharacters: .alphanumerics)
        if let password = components.percentEncodedPassword, !password.isEmpty {
            remember(components.password ?? password)
            remember(password)
            components.percentEncodedPassword = placeholder
        } else if let user = components.percentEncodedUser, !user.isEmpty {
            remember(components.user ?? user)
            remember(user)
            components.percentEncodedUser = placeholder
        } else {
            return url
        }
        return components.string ?? url
    }

    /// Every value hidden so far, hidden wherever else it appears in the entry's text.
    private func scrub(_ entry: inout HTTPArchive.Entry) {
        Self.scrub(&entry, hiding: Self.searched(hidden))
    }

    /// Base64 `text` with `values` hidden in the bytes it holds; as it is when none is there (or
    /// it is not Base64, which reading the file refuses).
    private static func scrub(base64 text: String, hiding values: [String]) -> String {
        guard let body = Data(base64Encoded: text) else { return text }
        let scrubbed = scrub(bytes: body, hiding: values)
        return scrubbed == body ? text : scrubbed.base64EncodedString()
    }

    /// Of values hidden, those searched for elsewhere, longest first.
    static func searched(_ values: Set<String>) -> [String] {
        values.filter { $0.count >= shortestSearched }.sorted { $0.count > $1.count }
    }

    /// `values` (longest first) hidden wherever they appear in the entry's text: in an entry
    /// recorded before they were known, say. Whether one was there: an entry scrubbed is encoded
    /// again.
    @discardableResult
    static func scrub(_ entry: inout HTTPArchive.Entry, hiding values: [String]) -> Bool {
        guard !values.isEmpty else { return false }
        var changed = false
        func clean(_ text: String) -> String {
            var text = text
            for value in values where text.contains(value) {
                text = text.replacingOccurrences(of: value, with: placeholder)
                changed = true
            }
            return text
        }
        func scrub(base64 text: String) -> String {
            let scrubbed = Self.scrub(base64: text, hiding: values)
            if scrubbed != text { changed = true }
            return scrubbed
        }
        let fields = { (fields: [HTTPArchive.Field]?) in fields?.map { HTTPArchive.Field(name: $0.name, value: clean($0.value)) } }
        entry.request.url = clean(entry.request.url)
        entry.response.redirectURL = entry.response.redirectURL.map(clean)
        entry.request.headers = fields(entry.request.headers)
        entry.request.queryString = fields(entry.request.queryString)
        entry.response.headers = fields(entry.response.headers)
        // Tern writes none, but a browser's export lists each cookie and form field apart.
        entry.request.cookies = fields(entry.request.cookies)
        entry.response.cookies = fields(entry.response.cookies)
        // A body kept as Base64 (no text: a multipart form, an image, a PDF) is searched byte
        // by byte: a token in a binary answer reached the file.
        if var data = entry.request.postData {
            data.params = fields(data.params)
            data.text = data.text.map { data.encoding == nil ? clean($0) : scrub(base64: $0) }
            entry.request.postData = data
        }
        if var content = entry.response.content {
            content.text = content.text.map { content.encoding == nil ? clean($0) : scrub(base64: $0) }
            entry.response.content = content
        }
        return changed
    }
}
