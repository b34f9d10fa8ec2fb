import Foundation
import Tern

/// A recording's exchanges, looked up by method and URL, and its file, written again after
/// each exchange recorded.
struct Recording: Sendable {
    let file: URL
    private(set) var exchanges: [RecordedExchange] = []
    /// Each lookup key's exchanges, in recorded order.
    private var index: [String: [Int]] = [:]
    private var redactor: Redactor

    /// A recording of `file`'s exchanges, or, when `fresh`, of none (the file is written anew
    /// at the first exchange recorded).
    init(file: URL, options: RecordingOptions, fresh: Bool) throws {
        self.file = file
        redactor = Redactor(secrets: options.secrets)
        if !fresh {
            for entry in try HTTPArchive.read(from: file).log.entries { add(entry) }
        }
    }

    private mutating func add(_ entry: HTTPArchive.Entry) {
        let exchange = RecordedExchange(entry)
        index[exchange.key.lookup, default: []].append(exchanges.count)
        exchanges.append(exchange)
    }

    /// The entry that answers a request: the first of those that match it not answered yet, else
    /// the last that matches, again. Without one, the nearest entries, each with why it does not
    /// match.
    mutating func answer(_ key: MatchKey, headers: HTTPHeaders, body: Data, options: RecordingOptions)
        -> Result<HTTPArchive.Entry, Unanswered> {
        if let chosen = chosen(for: key, headers: headers, body: body, options: options) {
            exchanges[chosen].answered += 1
            return .success(exchanges[chosen].entry)
        }
        let nearest = exchanges.compactMap { exchange in
            exchange.mismatch(with: key, headers: headers, body: body, options: options).map { (exchange.description, $0.reason, $0.distance) }
        }.sorted { $0.2 < $1.2 }.prefix(5)
        return .failure(Unanswered(nearest: nearest.map { (stub: $0.0, reason: $0.1) }))
    }

    /// The index of the first exchange that matches and has not answered, else of the last that
    /// matches. Those answered already are passed over without being compared, so that a
    /// request recorded thousands of times is not compared thousands of times.
    private func chosen(for key: MatchKey, headers: HTTPHeaders, body: Data, options: RecordingOptions) -> Int? {
        let candidates = index[key.lookup, default: []]
        func matches(_ index: Int) -> Bool { exchanges[index].mismatch(with: key, headers: headers, body: body, options: options) == nil }
        return candidates.first { exchanges[$0].answered == 0 && matches($0) } ?? candidates.last(where: matches)
    }

    /// The nearest entries to a request no entry answers.
    struct Unanswered: Error {
        let nearest: [(stub: String, reason: String)]
    }

    /// Adds an exchange, its secrets hidden, and writes the file: entries sorted by URL and
    /// method (those of one URL in recorded order), keys sorted, pretty printed.
    mutating func record(_ entry: HTTPArchive.Entry) throws {
        var entry = entry
        redactor.redact(&entry)
        add(entry)
        let entries = exchanges.enumerated().sorted { first, second in
            let (a, b) = (first.element.entry.request, second.element.entry.request)
            return (a.url, a.method, first.offset) < (b.url, b.method, second.offset)
        }.map(\.element.entry)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try HTTPArchive(log: HTTPArchive.Log(entries: entries)).encoded().write(to: file, options: .atomic)
    }
}
