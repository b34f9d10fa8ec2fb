import Foundation

/// What replay needs of an archive's values beyond their types, checked when the file is read:
/// a value replay could not use is an error naming its entry, not a crash or a wrong body when
/// the entry answers.
extension HTTPArchive {
    /// Throws a `DecodingError` naming the first value replay could not use: Base64 that is
    /// none, an encoding other than Base64, a status no response has, a chunk of negative size
    /// or pause.
    func check() throws {
        for (index, entry) in log.entries.enumerated() {
            func corrupt(_ path: [String], _ why: String) -> DecodingError {
                let keys = [Key("log"), Key("entries"), Key(index)] + path.map(Key.init)
                return DecodingError.dataCorrupted(DecodingError.Context(codingPath: keys, debugDescription: why))
            }
            let status = entry.response.status
            guard status == 0 || (100...999).contains(status) else { throw corrupt(["response", "status"], "\(status) is no HTTP status") }
            if let content = entry.response.content, !Self.isReadable(content.text, encoding: content.encoding) {
                throw corrupt(["response", "content", "text"], "not readable as \(content.encoding ?? "text")")
            }
            if let postData = entry.request.postData, !Self.isReadable(postData.text, encoding: postData.encoding) {
                throw corrupt(["request", "postData", "text"], "not readable as \(postData.encoding ?? "text")")
            }
            for (number, chunk) in (entry.chunks ?? []).enumerated() where !(chunk.size >= 0 && chunk.after >= 0 && chunk.after.isFinite) {
                throw corrupt(["_chunks", "\(number)"], "a chunk of \(chunk.size) bytes after \(chunk.after) s")
            }
        }
    }

    /// Whether a body written as `text` with `encoding` can be read: plain text, or Base64.
    private static func isReadable(_ text: String?, encoding: String?) -> Bool {
        switch encoding {
        case nil: return true
        case "base64": return text.map { Data(base64Encoded: $0) != nil } ?? true
        default: return false
        }
    }

    /// A step of the path to a value in the file.
    private struct Key: CodingKey {
        let stringValue: String
        let intValue: Int?
        init(_ name: String) { (stringValue, intValue) = (name, nil) }
        init(_ index: Int) { (stringValue, intValue) = ("Index \(index)", index) }
        init?(stringValue: String) { self.init(stringValue) }
        init?(intValue: Int) { self.init(intValue) }
    }
}
