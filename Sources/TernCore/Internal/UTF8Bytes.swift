// Byte-level reading of strings, for the checks that run on every request: URLs and headers
// are ASCII where it matters, and a native string is already stored as UTF-8.

extension String {
    /// Runs `body` over the string's UTF-8 bytes in place (a native string is stored that way).
    func withUTF8Bytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        var string = self
        return string.withUTF8(body)
    }
}

extension UInt8 {
    /// A–Z or a–z.
    var isASCIILetter: Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self | 0x20) }
    /// 0–9.
    var isASCIIDigit: Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) }
}
