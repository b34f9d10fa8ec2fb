import Testing
@testable import Tern

/// A streamed body cut into lines as its chunks come.
@Suite(.onTestThreads) struct LineSplitterTests {
    func split(_ chunks: [String], ends: LineSplitter.Ends = .lineFeed, cap: Int = 100) throws -> [String] {
        var splitter = LineSplitter(ends: ends, maximumLength: cap)
        var lines = try chunks.flatMap { try splitter.lines(in: Array($0.utf8)) }
        if let last = splitter.finish() { lines.append(last) }
        return lines.map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func lineFeedsAndCRLFEndLinesAndALineSplitAcrossChunksIsJoined() throws {
        #expect(try split(["one\ntw", "o\r", "\nthr", "ee"]) == ["one", "two", "three"])
        #expect(try split(["a\r\n", "\n", "b\rc\n"]) == ["a", "", "b\rc"])   // a lone CR is text here
    }

    @Test func carriageReturnsEndLinesForEvents() throws {
        let ends = LineSplitter.Ends.carriageReturnOrLineFeed
        #expect(try split(["a\rb\nc\r\nd"], ends: ends) == ["a", "b", "c", "d"])
        // A CRLF split between chunks is one end, not two.
        #expect(try split(["a\r", "\nb\r", "\r\n"], ends: ends) == ["a", "b", ""])
    }

    @Test func aLinePastTheCapIsRefusedEvenWhenItCameInPieces() throws {
        #expect(throws: LineSplitter.LineTooLong(maximumLength: 4)) { try split(["ab", "cd", "e\n"], cap: 4) }
        #expect(try split(["abcd\r\n"], cap: 4) == ["abcd"])
        #expect(try split(["abcd\n", "efgh\n"], cap: 4) == ["abcd", "efgh"])
    }

    @Test func aStreamEndingWithALineEndLeavesNoLastLine() throws {
        var splitter = LineSplitter(ends: .lineFeed, maximumLength: 10)
        #expect(try splitter.lines(in: Array("x\n".utf8)) == [Array("x".utf8)])
        #expect(splitter.finish() == nil)
    }
}
