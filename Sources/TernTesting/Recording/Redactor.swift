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
        if let data = entry.request.postData, data.encoding == nil, let text = data.text {
            entry.request.postData?.text = redactBody(text, mimeType: data.mimeType ?? "")
        } else if let data = entry.request.postData, let type = data.mimeType, Self.isMultipart(data),
                  let body = data.text.flatMap({ Data(base64Encoded: $0) }) {
            entry.request.postData?.text = redactMultipart(body, contentType: type).base64EncodedString()
        } else if let data = entry.request.postData, data.encoding == "base64", let text = data.text {
            entry.request.postData?.text = redactEncodedText(text, mimeType: data.mimeType ?? "")
        }
        if let content = entry.response.content, content.encoding == nil, let text = content.text {
            entry.response.content?.text = redactBody(text, mimeType: content.mimeType ?? "")
        } else if let content = entry.response.content, content.encoding == "base64", let type = content.mimeType,
                  type.lowercased().contains("multipart/"), let body = content.text.flatMap({ Data(base64Encoded: $0) }) {
            entry.response.content?.text = redactMultipart(body, contentType: type).base64EncodedString()
        } else if let content = entry.response.content, content.encoding == "base64", let text = content.text {
            entry.response.content?.text = redactEncodedText(text, mimeType: content.mimeType ?? "")
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

    /// A text body kept as Base64 because it is not UTF-8 (JSON in UTF-16, which `JSONDecoder`
    /// reads; Latin-1 its charset names), with the named fields hidden: read and written again
    /// in its own encoding, where a search for a value's UTF-8 bytes would miss it.
    private mutating func redactEncodedText(_ base64: String, mimeType: String) -> String {
        guard HTTPArchive.isText(mimeType), let bytes = Data(base64Encoded: base64) else { return base64 }
        let encoding = Self.encoding(of: bytes, mimeType: mimeType)
        guard encoding != .utf8, let text = String(data: bytes, encoding: encoding) else { return base64 }
        let redacted = redactBody(text, mimeType: mimeType)
        guard redacted != text, let written = redacted.data(using: encoding) else { return base64 }
        return written.base64EncodedString()
    }

    /// The encoding its charset names, or for JSON naming none, the one its first bytes show
    /// (RFC 4627, §3: a NUL before or after the first ASCII letter).
    private static func encoding(of bytes: Data, mimeType: String) -> String.Encoding {
        let named = String.Encoding(charsetOf: mimeType)
        guard named == .utf8, mimeType.lowercased().contains("json"), bytes.count >= 4 else { return named }
        let b = Array(bytes.prefix(4))
        if b[0] == 0xFE && b[1] == 0xFF || b[0] == 0xFF && b[1] == 0xFE { return b[2] == 0 && b[3] == 0 ? .utf32 : .utf16 }
        switch (b[0] == 0, b[1] == 0, b[2] == 0, b[3] == 0) {
        case (true, true, true, false): return .utf32BigEndian
        case (false, true, true, true): return .utf32LittleEndian
        case (true, false, _, _): return .utf16BigEndian
        case (false, true, _, _): return .utf16LittleEndian
        default: return .utf8
        }
    }

    /// A JSON or form body with the named fields hidden; any other body as it is.
    private mutating func redactBody(_ text: String, mimeType: String) -> String {
        if mimeType.lowercased().contains("x-www-form-urlencoded") {
            return text.split(separator: "&", omittingEmptySubsequences: false).map { pair in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(parts[0]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(parts[0])
                guard parts.count == 2, isSecret(name) else { return String(pair) }
                remember(String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(parts[1]))
                return parts[0] + "=" + (Self.placeholder.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            }.joined(separator: "&")
        }
        // Read as JSON only when a secret's name may be there as a member's: a large answer
        // without one (60 MiB of JSON took 1.1 GiB to read) is kept as it is. A name may be
        // written with escapes (`pass\u0077ord`), which only reading it finds.
        guard text.contains("\\u") || names.contains(where: { Self.contains(quoted: $0, in: text) }) else { return text }
        guard let json = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) else {
            if mimeType.lowercased().contains("text/event-stream") { rememberSecrets(inEvents: text) }
            return redactJSONLines(text)
        }
        var changed = false
        let redacted = redactJSON(json, changed: &changed)
        guard changed, let data = try? JSONSerialization.data(withJSONObject: redacted, options: [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed]) else { return text }
        return String(decoding: data, as: UTF8.self)
    }

    /// A body that is JSON a line at a time (newline-delimited JSON, an event stream's `data:`
    /// lines), with the named members hidden in each line that is a JSON object or array; the
    /// rest byte for byte as it was. Read as bytes: a line break in `\r\n` is one `Character`.
    private mutating func redactJSONLines(_ text: String) -> String {
        guard !names.isEmpty else { return text }
        let bytes = Data(text.utf8), data = Data("data:".utf8)
        var result = Data(), copied = bytes.startIndex, changed = false
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
            var line = bytes[start..<end]
            if line.starts(with: data) { line = line.dropFirst(data.count) }
            line = line.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
            while let last = line.last, last == UInt8(ascii: "\r") || last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { line = line.dropLast() }
            var lineChanged = false
            if line.first == UInt8(ascii: "{") || line.first == UInt8(ascii: "["),
               let json = try? JSONSerialization.jsonObject(with: line),
               case let redacted = redactJSON(json, changed: &lineChanged), lineChanged,
               let written = try? JSONSerialization.data(withJSONObject: redacted, options: [.sortedKeys, .withoutEscapingSlashes]) {
                result += bytes[copied..<line.startIndex]
                result += written
                copied = line.endIndex
                changed = true
            }
            start = end < bytes.endIndex ? end + 1 : end
        }
        guard changed else { return text }
        result += bytes[copied...]
        return String(decoding: result, as: UTF8.self)
    }

    /// Whether `text` holds `name` between quotes, in any case: a byte search, as `text` may be
    /// tens of MiB. A name with letters beyond ASCII is assumed there, for reading to decide.
    private static func contains(quoted name: String, in text: String) -> Bool {
        let needle = Array(("\"" + name + "\"").utf8)
        guard needle.allSatisfy({ $0 < 0x80 }) else { return true }
        func folded(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }
        var text = text
        return text.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return false }
            var start = 0
            // From quote to quote: memchr keeps a debug build's scan of a large body short.
            while bytes.count - start >= needle.count, let quote = memchr(base + start, 0x22, bytes.count - start) {
                start = base.distance(to: quote.assumingMemoryBound(to: UInt8.self))
                guard bytes.count - start >= needle.count else { return false }
                if needle.indices.allSatisfy({ folded(bytes[start + $0]) == needle[$0] }) { return true }
                start += 1
            }
            return false
        }
    }

    /// The named members' values in an event stream's events whose data is JSON, remembered for
    /// the scrub to hide: read as the stream's reader reads them, its lines ended by `\r\n`,
    /// `\n` or a lone `\r`, and each event's `data:` lines joined (JSON written over several).
    private mutating func rememberSecrets(inEvents text: String) {
        var data: [Substring] = []
        func endEvent() {
            defer { data = [] }
            guard !data.isEmpty, let json = try? JSONSerialization.jsonObject(with: Data(data.joined(separator: "\n").utf8)) else { return }
            var changed = false
            _ = redactJSON(json, changed: &changed)
        }
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) {
            if line.isEmpty { endEvent() }
            guard line.hasPrefix("data:") else { continue }
            let value = line.dropFirst(5)
            data.append(value.first == " " ? value.dropFirst() : value)
        }
        endEvent()
    }

    mutating func redactJSON(_ value: Any, changed: inout Bool) -> Any {
        if let object = value as? [String: Any] {
            var result: [String: Any] = [:]
            for (key, member) in object {
                if names.contains(key.lowercased()) {
                    remember(member as? String ?? String(describing: member))
                    result[key] = Self.placeholder
                    changed = true
                } else {
                    result[key] = redactJSON(member, changed: &changed)
                }
            }
            return result
        }
        if let array = value as? [Any] { return array.map { redactJSON($0, changed: &changed) } }
        return value
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

    /// Whether a request's body is a multipart one kept as Base64.
    static func isMultipart(_ data: HTTPArchive.PostData) -> Bool {
        data.encoding == "base64" && (data.mimeType ?? "").lowercased().contains("multipart/")
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
        // A body kept as Base64 (no text: a multipart form, an image, a PDF) is searched byte
        // by byte: a token in a binary answer reached the file.
        if var data = entry.request.postData {
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
