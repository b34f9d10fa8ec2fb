import Foundation
import Tern

/// Hiding the named fields of a body: JSON (whole, a line at a time, or in an event stream's
/// events), a form, multipart parts, and text in an encoding other than UTF-8.
extension Redactor {
    /// A body as an entry keeps it (text, or Base64 when `encoding` says so), with its named
    /// fields hidden.
    mutating func redactBody(kept text: String, encoding: String?, mimeType: String) -> String {
        switch encoding {
        case nil:
            return redactBody(text, mimeType: mimeType)
        case "base64" where mimeType.lowercased().contains("multipart/"):
            guard let body = Data(base64Encoded: text) else { return text }
            return redactMultipart(body, contentType: mimeType).base64EncodedString()
        case "base64":
            return redactEncodedText(text, mimeType: mimeType)
        default:
            return text
        }
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
    mutating func redactBody(_ text: String, mimeType: String) -> String {
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
            return redactJSONMembers(text)
        }
        var changed = false
        let redacted = redactJSON(json, changed: &changed)
        guard changed, let data = try? JSONSerialization.data(withJSONObject: redacted, options: [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed]) else { return text }
        return String(decoding: data, as: UTF8.self)
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
}
