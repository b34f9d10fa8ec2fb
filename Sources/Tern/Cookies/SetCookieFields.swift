import Foundation

/// `Set-Cookie` fields out of one header value, from a transport that joins repeated fields with
/// commas (URLSession), as for any field, though `Set-Cookie` is the one whose values hold commas
/// of their own (in `Expires` dates, and wherever a server puts them). One field with a comma
/// before a name and `=` cannot be told from two, and is read as two; libcurl's fields come one
/// by one (`ResponseHead.setCookies`), and are not cut.
package enum SetCookieFields {
    /// The fields of `joined`: it is cut at each comma after which a new `name=` begins before
    /// any `;`, which no date's comma ("Wed, 21 Oct 2099 07:28:00 GMT") is followed by.
    package static func split(_ joined: String) -> [String] {
        var fields: [String] = []
        var start = joined.startIndex
        var index = joined.startIndex
        while let comma = joined[index...].firstIndex(of: ",") {
            let next = joined[joined.index(after: comma)...]
            let head = next.prefix { $0 != ";" && $0 != "," }
            if head.contains("=") {
                fields.append(String(joined[start..<comma]))
                start = joined.index(after: comma)
            }
            index = joined.index(after: comma)
        }
        fields.append(String(joined[start...]))
        return fields.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}
