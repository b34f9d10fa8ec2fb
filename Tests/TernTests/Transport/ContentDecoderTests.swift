#if os(Linux)
import Foundation
import Testing
@testable import TernTransport

/// The decoder alone, fed a byte at a time or all at once: a stream's header, a member's end
/// and the next member's start split anywhere read the same.
@Suite struct ContentDecoderTests {
    static let text = ContentEncodingTests.text

    /// Everything `decoder` makes of `body`, fed in pieces of `size` bytes, then checked whole.
    func decode(_ body: Data, as encoding: String, inPiecesOf size: Int) throws -> Data {
        guard let decoder = try ContentDecoder(contentEncoding: encoding, requested: nil) else { return body }
        var decoded = Data()
        for start in stride(from: 0, to: body.count, by: size) {
            body[(body.startIndex + start)..<min(body.startIndex + start + size, body.endIndex)].withUnsafeBytes { decoder.push($0) }
            while let piece = try decoder.next() {
                #expect(piece.count <= ContentDecoder.pieceSize)
                decoded.append(piece)
            }
        }
        try decoder.finish()
        return decoded
    }

    static let wholes: [(String, Data, Data)] = [
        ("gzip", GzipStream.stored(text), text),
        ("gzip", GzipStream.stored(text) + GzipStream.stored(Data("more".utf8)), text + Data("more".utf8)),
        ("deflate", GzipStream.deflate(text), text),
        ("deflate", GzipStream.deflate(text, raw: true), text),
        ("gzip, deflate", GzipStream.deflate(GzipStream.stored(text)), text),
        ("gzip", GzipStream.stored(Data()), Data()),
        ("gzip", Data(), Data()),
    ]

    @Test(arguments: wholes.indices, [1, 7, 1_000, 1 << 20])
    func aWholeStreamDecodesTheSameInAnyPieces(index: Int, size: Int) throws {
        let (encoding, body, expected) = Self.wholes[index]
        #expect(try decode(body, as: encoding, inPiecesOf: size) == expected)
    }

    @Test(arguments: [1, 2, 9, 10, 11, 500, -8, -4, -1], [1, 1_000])
    func aGzipStreamCutAnywhereIsCutShort(at cut: Int, size: Int) throws {
        let gzip = GzipStream.stored(Self.text)
        let body = cut > 0 ? gzip.prefix(cut) : gzip.dropLast(-cut)
        #expect(throws: ContentDecoder.Failure.truncated(coding: "gzip")) { try decode(body, as: "gzip", inPiecesOf: size) }
    }

    @Test func anotherMembersFirstByteAloneIsCutShortAndAnyOtherByteTrails() throws {
        let gzip = GzipStream.stored(Self.text)
        #expect(throws: ContentDecoder.Failure.truncated(coding: "gzip")) { try decode(gzip + Data([0x1F]), as: "gzip", inPiecesOf: 1) }
        #expect(throws: ContentDecoder.Failure.trailingBytes(coding: "gzip")) { try decode(gzip + Data([0x1F, 0x8C]), as: "gzip", inPiecesOf: 1) }
        #expect(throws: ContentDecoder.Failure.trailingBytes(coding: "gzip")) { try decode(gzip + Data([0]), as: "gzip", inPiecesOf: 1) }
        #expect(throws: ContentDecoder.Failure.trailingBytes(coding: "deflate")) {
            try decode(GzipStream.deflate(Self.text) + Data([0]), as: "deflate", inPiecesOf: 1)
        }
    }

    @Test func whatARequestAcceptsIsReadAsHTTPSaysAndRefusalsCount() throws {
        #expect(ContentDecoder.acceptable("br;q=1.0, GZIP ;q=0.5, zstd;q=0, *;q=0.000, x") == ["br", "gzip", "x"])
        #expect(throws: ContentDecoder.Failure.unknownCoding("zstd")) { try ContentDecoder(contentEncoding: "zstd", requested: "zstd;q=0") }
        #expect(throws: ContentDecoder.Failure.unknownCoding("br")) { try ContentDecoder(contentEncoding: "gzip, br", requested: nil) }
        #expect(throws: ContentDecoder.Failure.tooManyCodings(5)) { try ContentDecoder(contentEncoding: "gzip,gzip,gzip,gzip,gzip", requested: nil) }
        #expect(try ContentDecoder(contentEncoding: "br", requested: "*") == nil)
        #expect(try ContentDecoder(contentEncoding: " identity ,", requested: nil) == nil)
        #expect(try ContentDecoder(contentEncoding: "gzip", requested: "identity") != nil)
    }
}
#endif
