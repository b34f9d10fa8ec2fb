import Foundation

/// One link of a `Link` header (RFC 8288): a target and its relations, such as a page's `next`.
/// Not public: users ask ``Response/link(rel:)``, which answers the question every caller had.
package struct WebLink: Sendable, Equatable {
    /// The target, resolved against the URL of the response that carried it.
    package let url: URL
    /// The relation types, lower-cased: `rel="next last"` is both `next` and `last`.
    package let relations: Set<String>
    /// The other parameters, names lower-cased; a parameter without a value has an empty one.
    package let parameters: [String: String]

    /// Creates a link.
    package init(url: URL, relations: Set<String>, parameters: [String: String] = [:]) {
        self.url = url
        self.relations = relations
        self.parameters = parameters
    }

    /// The links of a `Link` header's value, in order, with relative targets resolved against
    /// `base`. Several fields joined with commas read as one. Malformed links are skipped, never
    /// guessed at.
    package static func links(in header: String, relativeTo base: URL?) -> [WebLink] {
        var scanner = LinkScanner(Array(header.unicodeScalars))
        var links: [WebLink] = []
        while let (target, parameters) = scanner.nextLink() {
            guard let url = URL(string: target, relativeTo: base)?.absoluteURL else { continue }
            let relations = Set((parameters.first { $0.name == "rel" }?.value ?? "")
                .lowercased().split(whereSeparator: \.isWhitespace).map(String.init))
            var others: [String: String] = [:]
            for parameter in parameters where parameter.name != "rel" && others[parameter.name] == nil {
                others[parameter.name] = parameter.value
            }
            links.append(WebLink(url: url, relations: relations, parameters: others))
        }
        return links
    }
}

extension Response {
    /// The links of the response's `Link` headers, resolved against its final URL (after any
    /// redirect).
    package var links: [WebLink] {
        guard let header = httpResponse.value(forHTTPHeaderField: "Link") else { return [] }
        return WebLink.links(in: header, relativeTo: url)
    }

    /// The target of the response's first `Link` with relation `rel` (in any case), resolved
    /// against its final URL; `nil` when there is none.
    ///
    /// ```swift
    /// let response: Response = try await client.request(route: .get("/repos")).value
    /// if let next = response.link(rel: "next") { print(next) }
    /// ```
    public func link(rel: String) -> URL? {
        let rel = rel.lowercased()
        return links.first { $0.relations.contains(rel) }?.url
    }
}

/// Reads `<target>; name=value; name="quoted, value"; flag, <next>…` one link at a time.
private struct LinkScanner {
    private let scalars: [Unicode.Scalar]
    private var index = 0

    init(_ scalars: [Unicode.Scalar]) {
        self.scalars = scalars
    }

    private var current: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

    private mutating func skipSpaces() {
        while let scalar = current, scalar == " " || scalar == "\t" { index += 1 }
    }

    /// The next well-formed link, skipping anything malformed before it; `nil` at the end.
    mutating func nextLink() -> (target: String, parameters: [(name: String, value: String)])? {
        while index < scalars.count {
            skipSpaces()
            guard current == "<" else {
                skipPastComma()
                continue
            }
            index += 1
            var target = String.UnicodeScalarView()
            while let scalar = current, scalar != ">" {
                target.append(scalar)
                index += 1
            }
            guard current == ">" else { return nil }   // unterminated: nothing more to read
            index += 1
            var parameters: [(name: String, value: String)] = []
            var malformed = false
            while true {
                skipSpaces()
                guard let scalar = current else { break }
                if scalar == "," { index += 1; break }
                guard scalar == ";" else { malformed = true; skipPastComma(); break }
                index += 1
                skipSpaces()
                let name = token().lowercased()
                skipSpaces()
                var value = ""
                if current == "=" {
                    index += 1
                    skipSpaces()
                    value = current == "\"" ? quoted() : token()
                }
                if !name.isEmpty { parameters.append((name, value)) }
            }
            if !malformed { return (String(target), parameters) }
        }
        return nil
    }

    /// Characters up to a separator.
    private mutating func token() -> String {
        var text = String.UnicodeScalarView()
        while let scalar = current, !";,= \t\"".unicodeScalars.contains(scalar) {
            text.append(scalar)
            index += 1
        }
        return String(text)
    }

    /// A quoted string, with `\` escaping the next character.
    private mutating func quoted() -> String {
        index += 1
        var text = String.UnicodeScalarView()
        while let scalar = current, scalar != "\"" {
            if scalar == "\\", index + 1 < scalars.count { index += 1 }
            text.append(scalars[index])
            index += 1
        }
        if current == "\"" { index += 1 }
        return String(text)
    }

    /// Moves past the next comma that is not inside `<…>` or quotes.
    private mutating func skipPastComma() {
        var inQuotes = false, inTarget = false
        while let scalar = current {
            index += 1
            if scalar == "\"" && !inTarget { inQuotes.toggle() }
            if scalar == "<" && !inQuotes { inTarget = true }
            if scalar == ">" && !inQuotes { inTarget = false }
            if scalar == "," && !inQuotes && !inTarget { return }
        }
    }
}
