import Foundation

/// Secrets in a multipart body, which a recording keeps as Base64 (it is no text): a named
/// field's value, and each value hidden elsewhere, replaced by the placeholder's bytes; and how
/// such a body is matched on replay.
extension Redactor {
    /// The bytes of a part's value that its name asks to hide, remembered and replaced.
    mutating func redactMultipart(_ body: Data, contentType: String) -> Data {
        guard !names.isEmpty, let boundary = BodyValues.boundary(contentType), !boundary.isEmpty else { return body }
        let delimiter = Data("--\(boundary)".utf8), headEnd = Data("\r\n\r\n".utf8)
        var result = Data()
        var start = body.startIndex
        while let next = body.range(of: delimiter, in: start..<body.endIndex) {
            result += redactPart(body[start..<next.lowerBound], headEnd: headEnd) + delimiter
            start = next.upperBound
        }
        return result + body[start...]
    }

    /// A part (its head, a blank line, its value and the line break before the next delimiter)
    /// with its value hidden when its name is a secret's.
    private mutating func redactPart(_ part: Data, headEnd: Data) -> Data {
        guard let end = part.range(of: headEnd), part.count >= end.upperBound - part.startIndex + 2 else { return part }
        let head = String(decoding: part[part.startIndex..<end.lowerBound], as: UTF8.self)
        guard let name = Self.partName(head) else { return part }
        let value = part[end.upperBound..<(part.endIndex - 2)]
        guard isSecret(name) else {
            // A JSON part's named members, remembered for the scrub to hide in place: written
            // again, the part would no longer match what the app sends on replay.
            if head.lowercased().contains("json"), let json = try? JSONSerialization.jsonObject(with: value, options: .fragmentsAllowed) {
                var changed = false
                _ = redactJSON(json, changed: &changed)
            }
            return part
        }
        remember(String(decoding: value, as: UTF8.self))
        return part[part.startIndex..<end.upperBound] + Data(Self.placeholder.utf8) + part[(part.endIndex - 2)...]
    }

    /// The `name` of a part's `Content-Disposition`.
    private static func partName(_ head: String) -> String? {
        guard let range = head.range(of: "name=\"") else { return nil }
        return head[range.upperBound...].prefix { $0 != "\"" }.description
    }

    /// `values` hidden wherever their bytes appear in a body kept as Base64: a multipart form, an
    /// image, any body that is no text.
    static func scrub(bytes body: Data, hiding values: [String]) -> Data {
        var body = body
        let placeholder = Data(placeholder.utf8)
        for value in values {
            let needle = Data(value.utf8)
            while let range = body.range(of: needle) { body.replaceSubrange(range, with: placeholder) }
        }
        return body
    }
}

extension BodyValues {
    /// Whether a body matches a recorded one in which values were hidden: each placeholder
    /// stands for any bytes, the rest must be as recorded.
    static func matches(recorded: Data, sent: Data) -> Bool {
        let placeholder = Data(Redactor.placeholder.utf8)
        var pieces: [Data] = []
        var start = recorded.startIndex
        while let range = recorded.range(of: placeholder, in: start..<recorded.endIndex) {
            pieces.append(recorded[start..<range.lowerBound])
            start = range.upperBound
        }
        pieces.append(recorded[start...])
        guard pieces.count > 1, let first = pieces.first, let last = pieces.last,
              sent.starts(with: first), sent.count >= first.count + last.count, sent.suffix(last.count) == last else { return recorded == sent }
        var index = sent.startIndex + first.count
        let end = sent.endIndex - last.count
        for piece in pieces.dropFirst().dropLast() {
            guard let range = sent.range(of: piece, in: index..<end) else { return false }
            index = range.upperBound
        }
        return true
    }
}
