import Testing
@testable import Tern

/// Server-Sent Events as the WHATWG HTML specification reads them ("Interpreting an event
/// stream"), its examples among the cases.
@Suite(.onTestThreads) struct ServerSentEventParserTests {
    func events(_ chunks: [[UInt8]], parser: inout ServerSentEventParser) throws -> [ServerSentEvent] {
        try chunks.flatMap { try parser.events(in: $0) }
    }

    func events(_ text: String, inPiecesOf size: Int? = nil) throws -> [ServerSentEvent] {
        var parser = ServerSentEventParser(maximumLineLength: 1 << 16, maximumEventLength: 1 << 20)
        let bytes = Array(text.utf8)
        let chunks = size.map { size in stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min($0 + size, bytes.count)]) } } ?? [bytes]
        return try events(chunks, parser: &parser)
    }

    func message(_ data: String, type: String = "message", id: String = "") -> ServerSentEvent {
        ServerSentEvent(type: type, data: data, lastEventID: id)
    }

    @Test func everyFieldAndDataOverSeveralLines() throws {
        let stream = "event: completion\nid: 7\ndata: {\"token\":\ndata:  \"tern\"}\nretry: 2500\n\n"
        var parser = ServerSentEventParser(maximumLineLength: 1024, maximumEventLength: 1 << 20)
        #expect(try parser.events(in: Array(stream.utf8)) == [message("{\"token\":\n \"tern\"}", type: "completion", id: "7")])
        #expect(parser.reconnectionTime == 2500)
        #expect(parser.lastEventID == "7")
    }

    @Test func theSpecificationsExamples() throws {
        // "data: YHOO\ndata: +2\ndata: 10\n\n" is one message of three lines.
        #expect(try events("data: YHOO\ndata: +2\ndata: 10\n\n") == [message("YHOO\n+2\n10")])
        // A comment, an id kept for later events, a field without a value, and a colon-less data line.
        let stream = ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n"
        #expect(try events(stream) == [message("first event", id: "1"), message("second event"), message(" third event")])
        // "data" alone appends an empty line; two of them make one line feed.
        #expect(try events("data\n\ndata\ndata\n\ndata:\n") == [message(""), message("\n")])
    }

    @Test func anEventWithNoDataIsNotDispatchedAndTheEndDropsAnUnfinishedOne() throws {
        #expect(try events("event: ping\n\nid: 3\n\n").isEmpty)
        #expect(try events("data: complete\n\ndata: cut off") == [message("complete")])
    }

    @Test(arguments: ["\n", "\r", "\r\n"])
    func everyLineEnd(end: String) throws {
        let stream = ["event: a", "data: 1", "", "data: 2", "", ""].joined(separator: end)
        #expect(try events(stream) == [message("1", type: "a"), message("2")])
        #expect(try events(stream, inPiecesOf: 1) == [message("1", type: "a"), message("2")])
    }

    @Test func anEventSplitAcrossManySmallWritesIsOneEvent() throws {
        let stream = "\u{FEFF}id: 42\r\nevent: delta\r\ndata: h\u{E9}llo w\u{F6}rld \u{1F426}\r\n\r\n"
        for size in [1, 2, 3, 5, 7] {
            #expect(try events(stream, inPiecesOf: size) == [message("h\u{E9}llo w\u{F6}rld \u{1F426}", type: "delta", id: "42")])
        }
    }

    @Test func aByteOrderMarkIsDroppedOnlyAtTheStart() throws {
        #expect(try events("\u{FEFF}data: a\n\n") == [message("a")])
        // Later, it is the field name's: a field nobody knows.
        #expect(try events("data: a\n\n\u{FEFF}data: b\n\n") == [message("a")])
        // Part of one at the start, then other bytes: that part was the first line's, whose
        // field is then no field anybody knows.
        var parser = ServerSentEventParser(maximumLineLength: 100, maximumEventLength: 1 << 20)
        #expect(try events([[0xEF], Array("data: c\n\ndata: d\n\n".utf8)], parser: &parser) == [message("d")])
    }

    @Test func anIDWithANullAndARetryThatIsNotDigitsAreIgnored() throws {
        var parser = ServerSentEventParser(maximumLineLength: 100, maximumEventLength: 1 << 20)
        let stream = "id: 1\nretry: 300\ndata: a\n\nid: 2\u{0}\nretry: 3s\nretry:\nunknown: x\ndata: b\n\n"
        #expect(try parser.events(in: Array(stream.utf8)) == [message("a", id: "1"), message("b", id: "1")])
        #expect(parser.reconnectionTime == 300)
    }

    /// An ID that could not go back as `Last-Event-ID` (a control character other than a tab)
    /// is ignored, as one holding NUL is.
    @Test(arguments: [0x0B, 0x7F, 0x01, 0x1F]) func anIDThatCannotBeSentIsIgnored(control: UInt8) throws {
        var parser = ServerSentEventParser(maximumLineLength: 100, maximumEventLength: 1 << 20)
        let stream = Array("id: 1\ndata: a\n\nid: 2".utf8) + [control] + Array("\ndata: b\n\nid: 3\t4\ndata: c\n\n".utf8)
        #expect(try parser.events(in: stream) == [message("a", id: "1"), message("b", id: "1"), message("c", id: "3\t4")])
        #expect(parser.lastEventID == "3\t4")
    }

    @Test func anOverlongLineIsRefused() {
        var parser = ServerSentEventParser(maximumLineLength: 8, maximumEventLength: 1 << 20)
        #expect(throws: ServerSentEventParser.TooLong(limit: 8, isLine: true)) { try parser.events(in: Array("data: 0123456789\n\n".utf8)) }
    }

    /// Data lines without the blank line that ends their event: they stop at the event's limit,
    /// each line short; an event of just the limit's length goes out.
    @Test func anEventThatNeverEndsIsRefusedAtItsLimit() throws {
        var parser = ServerSentEventParser(maximumLineLength: 100, maximumEventLength: 64)
        let line = Array("data: 0123456\n".utf8)   // 8 bytes of data each, its line feed included
        #expect(try parser.events(in: Array(repeating: line, count: 8).joined() + Array("\n".utf8)).count == 1)
        #expect(throws: ServerSentEventParser.TooLong(limit: 64)) { try parser.events(in: Array(repeating: line, count: 9).joined()) }
    }
}
