import Foundation

/// Dates in HTTP fields (RFC 9110, §5.6.7): the preferred IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), and the obsolete RFC 850 and asctime forms a recipient
/// must still read. Anything else is no date: an `Expires` that is none means already expired.
package enum HTTPDate {
    private static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        return calendar
    }()

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// The date `text` says, or `nil`.
    package static func parse(_ text: String) -> Date? {
        fixdate(text) ?? obsolete(text)
    }

    /// An IMF-fixdate, read by position: what servers send, and read for every answer the cache
    /// gives (a `Calendar` took a tenth of a cache hit's time).
    private static func fixdate(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { bytes -> Date? in
            guard bytes.count == 29, bytes[3] == UInt8(ascii: ","), bytes[26] == UInt8(ascii: "G") else { return nil }
            func number(_ start: Int, _ count: Int) -> Int? {
                var value = 0
                for index in start..<start + count {
                    let digit = Int(bytes[index]) - 48
                    guard (0...9).contains(digit) else { return nil }
                    value = value * 10 + digit
                }
                return value
            }
            let monthName = String(decoding: bytes[8..<11], as: UTF8.self).lowercased()
            guard let day = number(5, 2), let month = months.firstIndex(of: monthName).map({ $0 + 1 }), let year = number(12, 4),
                  let hour = number(17, 2), let minute = number(20, 2), let second = number(23, 2),
                  (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
            // Days from 1970-01-01 to the civil date (the proleptic Gregorian calendar).
            let y = month <= 2 ? year - 1 : year
            let era = (y >= 0 ? y : y - 399) / 400
            let yearOfEra = y - era * 400
            let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
            let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
            let days = era * 146_097 + dayOfEra - 719_468
            return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second))
        }
    }

    /// The RFC 850 and asctime forms, and an IMF-fixdate spaced otherwise.
    private static func obsolete(_ text: String) -> Date? {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        var day: Int?, month: Int?, year: Int?, time: [Int]?
        for word in words {
            if word.contains(":") {
                let parts = word.split(separator: ":").compactMap { Int($0) }
                guard parts.count == 3 else { return nil }
                time = parts
            } else if word.contains("-") {   // RFC 850: 06-Nov-94
                let parts = word.split(separator: "-").map(String.init)
                guard parts.count == 3, let d = Int(parts[0]), let m = months.firstIndex(of: parts[1].lowercased()), let y = Int(parts[2]) else { return nil }
                (day, month, year) = (d, m + 1, y < 100 ? (y < 70 ? 2000 + y : 1900 + y) : y)
            } else if let m = months.firstIndex(of: word.lowercased()) {
                month = m + 1
            } else if let number = Int(word) {
                if number > 31 || word.count == 4 { year = number } else { day = number }
            }
        }
        guard let day, let month, let year, let time, (1...31).contains(day), time[0] < 24, time[1] < 60, time[2] < 61 else { return nil }
        var components = DateComponents()
        (components.year, components.month, components.day) = (year, month, day)
        (components.hour, components.minute, components.second) = (time[0], time[1], time[2])
        return calendar.date(from: components)
    }

    /// `date` as an IMF-fixdate.
    static func format(_ date: Date) -> String {
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let month = months[(c.month ?? 1) - 1].capitalized
        func two(_ value: Int?) -> String { value.map { $0 < 10 ? "0\($0)" : "\($0)" } ?? "00" }
        return "\(weekdays[(c.weekday ?? 1) - 1]), \(two(c.day)) \(month) \(c.year ?? 1970) \(two(c.hour)):\(two(c.minute)):\(two(c.second)) GMT"
    }
}
