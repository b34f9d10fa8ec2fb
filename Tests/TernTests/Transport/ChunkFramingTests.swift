#if os(Linux)
import Foundation
import Testing
@testable import TernTransport

/// The sizes a chunked body's framing declares, read from its raw bytes as they come.
@Suite(.onTestThreads) struct ChunkFramingTests {
    func declared(_ pieces: [String]) -> [UInt64] {
        var framing = ChunkFraming()
        return pieces.map { piece in
            Array(piece.utf8).withUnsafeBytes { framing.read($0) }
            return framing.declaredBytes
        }
    }

    @Test func sizesAddUpAcrossChunksExtensionsAndTrailers() {
        #expect(declared(["5;name=\"v\"\r\nhello\r\n", "6\r\n world\r\n", "0\r\nTrailer: 7FFFFFFF\r\n\r\n"]) == [5, 11, 11])
    }

    @Test func aSizeCountsAsItsDigitsComeBeforeItsLineEnds() {
        #expect(declared(["7", "FFF", "FFFFFFFFFFFF"]) == [7, 0x7FFF, 0x7FFF_FFFF_FFFF_FFFF])
    }

    @Test func dataSplitAnywhereIsSkippedNotReadAsSizes() {
        // "ffff" inside a chunk's data is data, and a size split from its line end counts once.
        let afterSecond: UInt64 = 10 + 0xFF
        let expected: [UInt64] = [10, 10, 10, afterSecond, afterSecond, afterSecond, afterSecond]
        #expect(declared(["a\r\nffff", "ffff\r", "\n", "\r\nff", "\r", "\n", "ffff"]) == expected)
    }

    @Test func bareLineFeedsEndLinesAsTheyDoInLibcurl() {
        #expect(declared(["3\nabc\n4\nabcd\n0\n\n"]) == [7])
    }

    @Test func sizesPastSixteenDigitsSaturate() {
        #expect(declared(["FFFFFFFFFFFFFFFFFFFF"]) == [.max])
        #expect(declared(["10\r\n0123456789abcdef\r\n", "FFFFFFFFFFFFFFFF"]) == [16, .max])
    }

    @Test func malformedFramingStopsTheCount() {
        #expect(declared(["zz\r\n", "FFFF\r\n"]) == [0, 0])
        #expect(declared(["2\r\nabX", "FFFF\r\n"]) == [2, 2])
        #expect(declared([";ext\r\n", "FFFF"]) == [0, 0])
    }
}
#endif
