import Foundation

extension String.Encoding {
    /// The encoding a `Content-Type`'s `charset` names; UTF-8 when it names none, or one not
    /// known here.
    package init(charsetOf contentType: String?) {
        self = Self.named(in: contentType)
    }

    private static func named(in contentType: String?) -> String.Encoding {
        guard let contentType, let charset = MediaTypeField.parameter("charset", in: contentType) else { return .utf8 }
        switch charset.lowercased() {
        case "iso-8859-1", "latin1": return .isoLatin1
        case "us-ascii", "ascii": return .ascii
        case "utf-16": return .utf16
        // Named with their byte order, as Windows servers write them: read as UTF-8, ASCII
        // text in UTF-16LE came back with a NUL after each letter.
        case "utf-16le": return .utf16LittleEndian
        case "utf-16be": return .utf16BigEndian
        case "utf-32": return .utf32
        case "utf-32le": return .utf32LittleEndian
        case "utf-32be": return .utf32BigEndian
        case "windows-1252", "cp1252": return .windowsCP1252
        case "windows-1250", "cp1250": return .windowsCP1250
        case "windows-1251", "cp1251": return .windowsCP1251
        case "iso-8859-2", "latin2": return .isoLatin2
        case "shift_jis", "shift-jis", "sjis": return .shiftJIS
        case "euc-jp": return .japaneseEUC
        case "iso-2022-jp": return .iso2022JP
        default: return .utf8
        }
    }
}
