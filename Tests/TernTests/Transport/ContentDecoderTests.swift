#if os(Linux)
import Foundation
import Testing
@testable import TernTransport

/// The decoder alone, fed a byte at a time or all at once: a stream's header, a member's end
/// and the next member's start split anywhere read the same.
@Suite(.onTestThreads) struct ContentDecoderTests {
    static let text = ContentEncodingTests.text

    /// Everything `decoder` makes of `body`, fed in pieces of `size` bytes, then checked whole.
    func decode(_ body: Data, as encoding: String, inPiecesOf size: Int) throws -> Data {
        guard let decoder = try ContentDecoder.forBody(contentEncoding: encoding, requested: nil) else { return body }
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
    ] + [
        Compressors.brotli(text).map { ("br", $0, text) },
        Compressors.zstd(text).map { ("zstd", $0, text) },
        Compressors.zstd(text).map { ("zstd", $0 + $0, text + text) },
        Compressors.brotli(GzipStream.stored(text)).map { ("gzip, br", $0, text) },
    ].compactMap { $0 }

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

    @Test(.enabled(if: Compressors.brotli(Data()) != nil && Compressors.zstd(Data()) != nil, "no brotli or zstd encoder here"),
          arguments: ["br", "zstd"], [1, 20, -1])
    func aBrotliOrZstdStreamCutAnywhereIsCutShort(encoding: String, cut: Int) throws {
        let whole = try #require(encoding == "br" ? Compressors.brotli(Self.text) : Compressors.zstd(Self.text))
        let body = cut > 0 ? whole.prefix(cut) : whole.dropLast(-cut)
        #expect(throws: ContentDecoder.Failure.truncated(coding: encoding)) { try decode(body, as: encoding, inPiecesOf: 3) }
    }

    /// A zstd frame may ask for a window of up to 2 GiB, which the decoder would allocate: held
    /// to 8 MiB, as browsers hold HTTP's zstd (RFC 8878), a frame of 16 MiB in one window fails
    /// before its memory is taken, and one of 4 MiB decodes.
    @Test(.enabled(if: Compressors.zstd(Data()) != nil, "no zstd encoder here"))
    func aZstdFrameThatAsksForMoreThanAnEightMiBWindowFails() throws {
        let large = try #require(Compressors.zstd(Data(count: 16 << 20), windowLog: 25))
        let small = try #require(Compressors.zstd(Data(count: 4 << 20), windowLog: 25))
        do {
            _ = try decode(large, as: "zstd", inPiecesOf: 1 << 20)
            Issue.record("a frame asking for a 16 MiB window decoded")
        } catch let ContentDecoder.Failure.corrupt(coding, reason) {
            #expect(coding == "zstd")
            #expect(reason.contains("memory"), "\(reason)")
        }
        #expect(try decode(small, as: "zstd", inPiecesOf: 1 << 20).count == 4 << 20)
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

    /// Streams compressed for real and then damaged at random (bytes changed, put in, taken
    /// out, the stream cut), fed in pieces of random sizes: each decodes to exactly what was
    /// compressed, or fails with a reason; never a crash, a hang or another body. Deflate
    /// without zlib's framing, and brotli, carry no check of what they make, only of where they
    /// end: damage inside can decode to other bytes, as it would for any reader; they are fed
    /// for the rest.
    @Test(arguments: 0..<4)
    func aDamagedStreamDecodesWholeOrFails(seed: UInt64) throws {
        var random = SplitMix(seed: 0xC0DE + seed)
        let json = Data((0..<60).map { #"{"id":\#($0),"name":"item \#($0)","tags":["a","b"],"price":\#(Double($0) * 1.5)}"# }.joined(separator: ",").utf8)
        let streams = [("gzip", GzipStream.compressed(json), true), ("deflate", GzipStream.zlibCompressed(json), true),
                       ("gzip", GzipStream.stored(json), true), ("deflate", GzipStream.zlibCompressed(json).dropFirst(2).dropLast(4), false)]
            + [Compressors.zstd(json).map { ("zstd", $0, true) }, Compressors.brotli(json).map { ("br", $0, false) }].compactMap { $0 }
        var failed = 0, checked = 0
        for _ in 0..<500 {
            let (encoding, original, isChecked) = streams[Int(random.next() % UInt64(streams.count))]
            var damaged = [UInt8](original)
            for _ in 0..<(1 + random.next() % 3) {
                let at = Int(random.next() % UInt64(damaged.count))
                switch random.next() % 4 {
                case 0: damaged[at] ^= UInt8(1 << (random.next() % 8))
                case 1: damaged[at] = UInt8(truncatingIfNeeded: random.next())
                case 2: damaged.insert(UInt8(truncatingIfNeeded: random.next()), at: at)
                default: damaged.removeSubrange(at..<min(damaged.count, at + 1 + Int(random.next() % 16)))
                }
                if damaged.isEmpty { damaged = [0] }
            }
            if random.next() % 4 == 0 { damaged.removeLast(Int(random.next() % UInt64(damaged.count))) }
            checked += isChecked ? 1 : 0
            do {
                let decoded = try decode(Data(damaged), as: encoding, inPiecesOf: 1 + Int(random.next() % 300))
                // Only damage that left the stream as it was (a byte set to its own value), or
                // the empty body a cut to nothing is, decodes.
                if isChecked { #expect(decoded == json || (decoded.isEmpty && damaged.isEmpty), "\(encoding) decoded to \(decoded.count) bytes") }
            } catch {
                failed += isChecked ? 1 : 0
            }
        }
        #expect(failed > checked * 9 / 10, "\(failed) of \(checked) damaged streams with a check failed")
    }

    @Test func whatARequestAcceptsIsReadAsHTTPSaysAndRefusalsCount() throws {
        #expect(ContentDecoder.acceptable("br;q=1.0, GZIP ;q=0.5, zstd;q=0, *;q=0.000, x") == ["br", "gzip", "x"])
        #expect(throws: ContentDecoder.Failure.unknownCoding("x-secret")) { try ContentDecoder.forBody(contentEncoding: "x-secret", requested: "x-secret;q=0") }
        #expect(throws: ContentDecoder.Failure.unknownCoding("x-secret")) { try ContentDecoder.forBody(contentEncoding: "gzip, x-secret", requested: nil) }
        #expect(throws: ContentDecoder.Failure.tooManyCodings(5)) { try ContentDecoder.forBody(contentEncoding: "gzip,gzip,gzip,gzip,gzip", requested: nil) }
        #expect(try ContentDecoder.forBody(contentEncoding: "x-secret", requested: "*") == nil)
        #expect(try ContentDecoder.forBody(contentEncoding: " identity ,", requested: nil) == nil)
        #expect(try ContentDecoder.forBody(contentEncoding: "gzip", requested: "identity") != nil)
    }
}
#endif
