/// The directives of a `Cache-Control` field (RFC 9111, §5.2), request's or response's: names
/// in lower case, each with its argument if it has one (a quoted string unquoted). A directive
/// given twice keeps its first argument; one the cache does not know is kept and ignored.
struct CacheControl: Equatable {
    private(set) var directives: [String: String?] = [:]

    /// The directives of every `Cache-Control` value given, in order.
    init(_ values: [String]) {
        for value in values { parse(Array(value.utf8)) }
    }

    /// Whether `name` is present.
    func has(_ name: String) -> Bool { directives[name] != nil }

    /// The argument of `name` as a count of seconds (delta-seconds): `nil` when absent or not a
    /// number. A number past `Int32.max` is `Int32.max`, as §1.2.2 says.
    func seconds(_ name: String) -> Int? {
        guard let argument = directives[name], let text = argument else { return nil }
        return Self.deltaSeconds(text)
    }

    /// `text` as delta-seconds (RFC 9111, §1.2.2): digits alone, or `nil`; a number past
    /// `Int32.max` is `Int32.max`, however many digits it has.
    static func deltaSeconds(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int(text).map { min($0, Int(Int32.max)) } ?? Int(Int32.max)
    }

    /// `max-stale` as a request gives it: `.some(nil)` for any staleness, `.some(n)` for up to n
    /// seconds, `nil` when absent.
    var maxStale: Int?? {
        guard let argument = directives["max-stale"] else { return nil }
        guard argument != nil else { return .some(nil) }
        return .some(seconds("max-stale") ?? 0)
    }

    private mutating func parse(_ bytes: [UInt8]) {
        var index = 0
        func skipSpace() { while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 } }
        while index < bytes.count {
            skipSpace()
            let nameStart = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "="), bytes[index] != UInt8(ascii: ",") { index += 1 }
            let name = String(decoding: bytes[nameStart..<index], as: UTF8.self).trimmingSpace().lowercased()
            var argument: String?
            if index < bytes.count, bytes[index] == UInt8(ascii: "=") {
                index += 1
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                    index += 1
                    var text: [UInt8] = []
                    while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                        if bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count { index += 1 }
                        text.append(bytes[index])
                        index += 1
                    }
                    index += 1
                    argument = String(decoding: text, as: UTF8.self)
                    while index < bytes.count, bytes[index] != UInt8(ascii: ",") { index += 1 }
                } else {
                    let start = index
                    while index < bytes.count, bytes[index] != UInt8(ascii: ",") { index += 1 }
                    argument = String(decoding: bytes[start..<index], as: UTF8.self).trimmingSpace()
                }
            }
            index += 1   // past the comma
            guard !name.isEmpty, directives[name] == nil else { continue }
            directives[name] = .some(argument)
        }
    }
}

extension String {
    /// Without leading and trailing spaces and tabs.
    func trimmingSpace() -> String {
        let isSpace = { (character: Character) in character == " " || character == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
