import Foundation

/// Keeps secrets out of a recording: the credentials HTTP names and the values of the names a
/// test gives are written as ``placeholder``; each value hidden is remembered, and hidden
/// wherever else it appears later (a token a response issued, echoed in a URL or a body).
struct Redactor: Sendable {
    /// What a hidden value is written as; on replay it matches any value.
    static let placeholder = "[redacted]"
    /// Values shorter than this are hidden where they are named, not searched for elsewhere.
    private static let shortestSearched = 6
    private static let credentials: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    /// Names of fields, query items and JSON members to hide.
    private let names: Set<String>
    /// Header names to hide, in lower case.
    private let headerNames: Set<String>
    /// Every value hidden so far, longest first when searched for.
    private(set) var hidden: Set<String> = []

    init(secrets: [String]) {
        names = Set(secrets)
        headerNames = Self.credentials.union(secrets.map { $0.lowercased() })
    }

    mutating func redact(_ entry: inout HTTPArchive.Entry) {
        entry.request.headers = entry.request.headers.map { $0.map { redactHeader($0) } }
        entry.response.headers = entry.response.headers.map { $0.map { redactHeader($0) } }
        entry.request.url = redactQuery(entry.request.url)
        entry.request.queryString = entry.request.queryString?.map { names.contains($0.name) ? hide($0) : $0 }
        if let data = entry.request.postData, data.encoding == nil, let text = data.text {
            entry.request.postData?.text = redactBody(text, mimeType: data.mimeType ?? "")
        }
        if let content = entry.response.content, content.encoding == nil, let text = content.text {
            entry.response.content?.text = redactBody(text, mimeType: content.mimeType ?? "")
        }
        scrub(&entry)
    }

    /// A field's value hidden, and remembered.
    private mutating func hide(_ field: HTTPArchive.Field) -> HTTPArchive.Field {
        remember(field.value)
        return HTTPArchive.Field(name: field.name, value: Self.placeholder)
    }

    private mutating func remember(_ value: String) {
        let value = value.trimmingCharacters(in: .whitespaces)
        guard !value.isEmpty, value != Self.placeholder else { return }
        hidden.insert(value)
        // A credential's token alone, as a body or a URL would carry it: `Bearer t0k3n`'s `t0k3n`.
        for word in value.split(separator: " ").dropFirst() where word.count >= Self.shortestSearched { hidden.insert(String(word)) }
    }

    private mutating func redactHeader(_ field: HTTPArchive.Field) -> HTTPArchive.Field {
        let name = field.name.lowercased()
        guard headerNames.contains(name) else { return field }
        switch name {
        case "cookie":
            // Each cookie's name kept, its value hidden: `a=[redacted]; b=[redacted]`.
            let cookies = field.value.split(separator: ";").map { pair -> String in
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { remember(String(parts[1])) }
                return parts[0].trimmingCharacters(in: .whitespaces) + "=" + Self.placeholder
            }
            return HTTPArchive.Field(name: field.name, value: cookies.joined(separator: "; "))
        case "set-cookie":
            // The cookie's name and attributes kept: `session=[redacted]; Path=/; HttpOnly`.
            var parts = field.value.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
            let pair = parts[0].split(separator: "=", maxSplits: 1)
            if pair.count == 2 { remember(String(pair[1])) }
            parts[0] = "\(pair.first ?? "")=\(Self.placeholder)"
            return HTTPArchive.Field(name: field.name, value: parts.joined(separator: ";"))
        default:
            return hide(field)
        }
    }

    private mutating func redactQuery(_ url: String) -> String {
        guard var components = URLComponents(string: url), let items = components.percentEncodedQueryItems,
              items.contains(where: { names.contains($0.name.removingPercentEncoding ?? $0.name) }) else { return url }
        let encoded = Self.placeholder.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? Self.placeholder
        components.percentEncodedQueryItems = items.map { item in
            guard names.contains(item.name.removingPercentEncoding ?? item.name) else { return item }
            remember(item.value?.removingPercentEncoding ?? "")
            return URLQueryItem(name: item.name, value: encoded)
        }
        return components.string ?? url
    }

    /// A JSON or form body with the named fields hidden; any other body as it is.
    private mutating func redactBody(_ text: String, mimeType: String) -> String {
        if mimeType.lowercased().contains("x-www-form-urlencoded") {
            return text.split(separator: "&", omittingEmptySubsequences: false).map { pair in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(parts[0]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(parts[0])
                guard parts.count == 2, names.contains(name) else { return String(pair) }
                remember(String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(parts[1]))
                return parts[0] + "=" + (Self.placeholder.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            }.joined(separator: "&")
        }
        guard !names.isEmpty, let json = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) else { return text }
        var changed = false
        let redacted = redactJSON(json, changed: &changed)
        guard changed, let data = try? JSONSerialization.data(withJSONObject: redacted, options: [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed]) else { return text }
        return String(decoding: data, as: UTF8.self)
    }

    private mutating func redactJSON(_ value: Any, changed: inout Bool) -> Any {
        if let object = value as? [String: Any] {
            var result: [String: Any] = [:]
            for (key, member) in object {
                if names.contains(key) {
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
        let values = hidden.filter { $0.count >= Self.shortestSearched }.sorted { $0.count > $1.count }
        guard !values.isEmpty else { return }
        func clean(_ text: String) -> String {
            var text = text
            for value in values where text.contains(value) { text = text.replacingOccurrences(of: value, with: Self.placeholder) }
            return text
        }
        let fields = { (fields: [HTTPArchive.Field]?) in fields?.map { HTTPArchive.Field(name: $0.name, value: clean($0.value)) } }
        entry.request.url = clean(entry.request.url)
        entry.request.headers = fields(entry.request.headers)
        entry.request.queryString = fields(entry.request.queryString)
        entry.response.headers = fields(entry.response.headers)
        if var data = entry.request.postData, data.encoding == nil {
            data.text = data.text.map(clean)
            entry.request.postData = data
        }
        if var content = entry.response.content, content.encoding == nil {
            content.text = content.text.map(clean)
            entry.response.content = content
        }
    }
}
