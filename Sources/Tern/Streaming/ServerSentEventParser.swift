/// Reads a Server-Sent Events stream as its chunks arrive, as the WHATWG HTML specification says
/// ("Interpreting an event stream"): a leading byte order mark dropped, lines ended by CR, LF or
/// CRLF, comments skipped, `event`, `data` (over several lines), `id` and `retry` fields, an
/// event dispatched at each blank line, and an event the stream ends in the middle of dropped.
/// Lines and events are held to limits: a server that never ends a line, or sends data lines
/// and never the blank line that ends their event, would otherwise fill memory.
///
/// A value: it takes a chunk and returns the events it completed; no I/O.
struct ServerSentEventParser {
    private var lines: LineSplitter
    /// The stream's first bytes while they may still be a byte order mark; `nil` after.
    private var start: [UInt8]? = []
    private var eventType = ""
    private var data = ""
    /// The most bytes an event's data may have, its line feeds included.
    private let maximumEventLength: Int
    /// The `id` field read last, which the next blank line makes the last event ID.
    private var idBuffer = ""
    /// The last event ID, as of the latest blank line: what a reconnection sends as
    /// `Last-Event-ID`. It carries over from one event to the next.
    private(set) var lastEventID = ""
    /// The reconnection time the server asked for with `retry`, in milliseconds, if it did.
    private(set) var reconnectionTime: Int?

    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// A line or an event past its limit: the most bytes it may have.
    struct TooLong: Error, Equatable {
        let limit: Int
        /// Whether a line passed it, rather than an event's data.
        var isLine = false
    }

    /// A parser whose lines may be at most `maximumLineLength` bytes, and its events' data
    /// `maximumEventLength`; its last event ID is `lastEventID` until an `id` field sets
    /// another (an event source's, carried over from its last connection).
    init(maximumLineLength: Int, maximumEventLength: Int, lastEventID: String = "") {
        lines = LineSplitter(ends: .carriageReturnOrLineFeed, maximumLength: maximumLineLength)
        self.maximumEventLength = maximumEventLength
        self.lastEventID = lastEventID
        idBuffer = lastEventID
    }

    /// The events `chunk` completes.
    mutating func events(in chunk: some Collection<UInt8>) throws(TooLong) -> [ServerSentEvent] {
        guard var start else { return try events(inLinesOf: chunk) }
        // A byte order mark opening the stream is not part of its first line; it may come split.
        start += chunk
        if start.count < 3, Self.byteOrderMark.starts(with: start) {
            self.start = start
            return []
        }
        self.start = nil
        return try events(inLinesOf: start.starts(with: Self.byteOrderMark) ? start.dropFirst(3) : start[...])
    }

    private mutating func events(inLinesOf bytes: some Collection<UInt8>) throws(TooLong) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        let lines: [[UInt8]]
        do {
            lines = try self.lines.lines(in: bytes)
        } catch {
            throw TooLong(limit: error.maximumLength, isLine: true)
        }
        for line in lines {
            if let event = try read(line) { events.append(event) }
        }
        return events
    }

    /// Reads one line; returns the event a blank line dispatches.
    private mutating func read(_ line: [UInt8]) throws(TooLong) -> ServerSentEvent? {
        guard !line.isEmpty else { return dispatch() }
        if line.first == UInt8(ascii: ":") { return nil }   // a comment
        let field: String
        var value: ArraySlice<UInt8>
        if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            field = String(decoding: line[..<colon], as: UTF8.self)
            value = line[(colon + 1)...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        } else {
            field = String(decoding: line, as: UTF8.self)
            value = []
        }
        switch field {
        case "event":
            eventType = String(decoding: value, as: UTF8.self)
        case "data":
            // Measured decoded: a byte that is no UTF-8 becomes U+FFFD, three bytes.
            let text = String(decoding: value, as: UTF8.self)
            guard data.utf8.count + text.utf8.count + 1 <= maximumEventLength else { throw TooLong(limit: maximumEventLength) }
            data += text
            data += "\n"
        case "id":
            // The specification ignores an ID holding NUL; one holding any control character
            // that cannot go in a header (VT, DEL…) is ignored too: sent back as
            // `Last-Event-ID`, it failed the next connection, and ended the source for good.
            if !value.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) { idBuffer = String(decoding: value, as: UTF8.self) }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
                reconnectionTime = Int(String(decoding: value, as: UTF8.self)) ?? reconnectionTime
            }
        default:
            break   // a field it does not know
        }
        return nil
    }

    private mutating func dispatch() -> ServerSentEvent? {
        defer {
            data = ""
            eventType = ""
        }
        lastEventID = idBuffer
        guard !data.isEmpty else { return nil }
        if data.last == "\n" { data.removeLast() }
        return ServerSentEvent(type: eventType.isEmpty ? "message" : eventType, data: data, lastEventID: lastEventID)
    }
}
