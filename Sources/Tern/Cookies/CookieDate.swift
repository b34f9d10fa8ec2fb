import Foundation

/// The date of a cookie's `Expires` attribute, read as RFC 6265 section 5.1.1 says: tokens
/// in any order, the first time, day of month, month and year found, whatever date format the
/// server used ("Wed, 21 Oct 2099 07:28:00 GMT", "Wednesday, 21-Oct-99 07:28:00 GMT", …).
package enum CookieDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// The date, or `nil` when the text names no valid one.
    package static func parse(_ text: String) -> Date? {
        var time: (Int, Int, Int)?
        var day: Int?
        var month: Int?
        var year: Int?
        let isDelimiter: (Character) -> Bool = { character in
            guard let ascii = character.asciiValue else { return false }
            return ascii == 0x09 || (0x20...0x2F).contains(ascii) || (0x3B...0x40).contains(ascii)
                || (0x5B...0x60).contains(ascii) || (0x7B...0x7E).contains(ascii)
        }
        for token in text.split(whereSeparator: isDelimiter) {
            if time == nil, let found = Self.time(token) {
                time = found
            } else if day == nil, let found = leadingDigits(token, 1...2) {
                day = found
            } else if month == nil, let index = months.firstIndex(where: { token.lowercased().hasPrefix($0) }) {
                month = index + 1
            } else if year == nil, let found = leadingDigits(token, 2...4) {
                year = found
            }
        }
        guard let (hour, minute, second) = time, let day, let month, var year else { return nil }
        if (70...99).contains(year) { year += 1900 } else if (0...69).contains(year) { year += 2000 }
        guard (1...31).contains(day), year >= 1601, hour <= 23, minute <= 59, second <= 59 else { return nil }
        var components = DateComponents()
        (components.year, components.month, components.day) = (year, month, day)
        (components.hour, components.minute, components.second) = (hour, minute, second)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        // A day past the month's end (31 February) is no date.
        guard let date = calendar.date(from: components), calendar.component(.day, from: date) == day else { return nil }
        return date
    }

    /// A number of `digits` digits at the start of `token`, followed by anything but a digit.
    private static func leadingDigits(_ token: Substring, _ digits: ClosedRange<Int>) -> Int? {
        let prefix = token.prefix { $0.isASCII && $0.isNumber }
        guard digits.contains(prefix.count) else { return nil }
        return Int(prefix)
    }

    /// `h:m:s`, each of one or two digits.
    private static func time(_ token: Substring) -> (Int, Int, Int)? {
        let parts = token.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let numbers = parts.enumerated().compactMap { index, part -> Int? in
            let digits = part.prefix { $0.isASCII && $0.isNumber }
            guard (1...2).contains(digits.count), index == 2 || digits.count == part.count else { return nil }
            return Int(digits)
        }
        guard numbers.count == 3 else { return nil }
        return (numbers[0], numbers[1], numbers[2])
    }
}
