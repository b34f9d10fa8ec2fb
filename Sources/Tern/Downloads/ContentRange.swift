/// A `Content-Range` header of a 206: `bytes <start>-<end>/<total or *>`. A range whose last
/// byte is the last an `Int64` numbers is none: its length (`end + 1`) is no number.
struct ContentRange: Equatable {
    let start: Int64
    let end: Int64
    let total: Int64?

    init?(_ header: String?) {
        guard let header, header.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = header.dropFirst("bytes ".count).split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let bounds = spec[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard spec.count == 2, bounds.count == 2, let start = Int64(bounds[0]), let end = Int64(bounds[1]), start >= 0, end >= start,
              end < Int64.max else { return nil }
        let total = Int64(spec[1])
        guard spec[1] == "*" || (total.map { $0 > end } ?? false) else { return nil }
        self.start = start
        self.end = end
        self.total = total
    }
}
