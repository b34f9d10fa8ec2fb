import Foundation
import Tern

/// A recording's exchanges, looked up by method and URL, and, unless it only replays, the file
/// it adds to after each exchange recorded (shared with the other transports writing it).
struct Recording: Sendable {
    private(set) var exchanges: [RecordedExchange] = []
    /// Each lookup key's exchanges, in recorded order.
    private var index: [String: [Int]] = [:]
    private var redactor: Redactor
    /// How many exchanges the file held when the run began: only those answer. One recorded in
    /// this run answered the request that recorded it, so that the same request made again (a
    /// refresh's replay, a retry, a poll) is sent and recorded too, in its order.
    private var fromFile = 0
    /// Where exchanges recorded are written: `nil` when replaying.
    private let file: RecordingFile?

    /// The recording of `file`: read, for replay; opened to be written too, when `writes`
    /// (then begun anew, when `fresh`, at the first exchange recorded).
    init(file: URL, options: RecordingOptions, writes: Bool, fresh: Bool) throws {
        redactor = Redactor(secrets: options.secrets)
        if !fresh { RecordingFile.waitForExchanges(into: file) }
        self.file = writes ? try RecordingFile.opening(file, fresh: fresh) : nil
        if !fresh {
            for entry in try self.file?.entries ?? HTTPArchive.read(from: file).log.entries { add(entry) }
        }
        fromFile = exchanges.count
    }

    private mutating func add(_ entry: HTTPArchive.Entry) {
        let exchange = RecordedExchange(entry)
        index[exchange.key.lookup, default: []].append(exchanges.count)
        exchanges.append(exchange)
    }

    /// The entry that answers a request, of those read from the file: the first that matches it
    /// not answered yet, else the last that matches, again. Without one, the nearest entries,
    /// each with why it does not match, never telling the request's values `redactor` hides.
    mutating func answer(_ key: MatchKey, headers: HTTPHeaders, body: SentBody, options: RecordingOptions, telling redactor: Redactor? = nil)
        -> Result<HTTPArchive.Entry, Unanswered> {
        if let chosen = chosen(for: key, headers: headers, body: body, options: options) {
            exchanges[chosen].answered += 1
            return .success(exchanges[chosen].entry)
        }
        let nearest = exchanges.compactMap { exchange in
            exchange.mismatch(with: key, headers: headers, body: body, options: options, telling: redactor).map { (exchange.description, $0.reason, $0.distance) }
        }.sorted { $0.2 < $1.2 }.prefix(5)
        return .failure(Unanswered(nearest: nearest.map { (stub: $0.0, reason: $0.1) }))
    }

    /// The index of the first exchange read from the file that matches and has not answered,
    /// else of the last that matches; of those, first one recorded with the request's values of
    /// the headers its response varies by (English and French answers of one URL, replayed to
    /// requests in another order). Those answered already are passed over without being
    /// compared, so that a request recorded thousands of times is not compared thousands of times.
    private func chosen(for key: MatchKey, headers: HTTPHeaders, body: SentBody, options: RecordingOptions) -> Int? {
        // Indexes go up: those of the file's exchanges come first.
        let candidates = index[key.lookup, default: []].prefix { $0 < fromFile }
        func matches(_ index: Int) -> Bool { exchanges[index].mismatch(with: key, headers: headers, body: body, options: options) == nil }
        func agrees(_ index: Int) -> Bool { exchanges[index].agreesOnVary(headers) }
        return candidates.first { exchanges[$0].answered == 0 && agrees($0) && matches($0) }
            ?? candidates.last { agrees($0) && matches($0) }
            ?? candidates.first { exchanges[$0].answered == 0 && matches($0) }
            ?? candidates.last(where: matches)
    }

    /// An exchange to be recorded was sent; ``ended()`` follows once it has ended.
    func began() { file?.began() }

    /// An exchange to be recorded ended, its entry written if it has one.
    func ended() { file?.ended() }

    /// The nearest entries to a request no entry answers.
    struct Unanswered: Error {
        let nearest: [(stub: String, reason: String)]
    }

    /// Adds an exchange, its secrets hidden (the headers its request named as credentials too,
    /// from now on), and writes it to the file, hiding there too any value first hidden now. An
    /// exchange that failed is not answered from: the request's next attempt is sent.
    mutating func record(_ entry: HTTPArchive.Entry, credentialHeaders: Set<String>) throws {
        var entry = entry
        redactor.hideHeaders(credentialHeaders)
        let known = redactor.hidden
        redactor.redact(&entry)
        if entry.error == nil, entry.response.status != 0 { add(entry) }
        try file?.add(entry, hiding: Redactor.searched(redactor.hidden.subtracting(known)))
    }
}
