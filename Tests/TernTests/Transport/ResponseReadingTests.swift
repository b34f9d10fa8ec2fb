#if os(Linux)
import Foundation
import Testing
import TernCore
@testable import TernTransport

/// What an exchange has read of its response, alone: bytes held over a pause skipped, the body's
/// decoding decided at its first byte, a chunked body's declared sizes watched against its
/// limit. Over libcurl, these are `PausedTransferTests`', `ContentEncodingTests`' and
/// `ResponseLimitTests`'.
@Suite(.onTestThreads) struct ResponseReadingTests {
    static func head(_ fields: [String: String], version: String = "HTTP/1.1") -> ResponseHead {
        ResponseHead(url: URL(string: "http://127.0.0.1/")!, statusCode: 200, httpVersion: version,
                     headers: HTTPHeaders(fields.map { ($0.key, $0.value) }))!
    }

    @Test func bytesHeldOverAPauseAreSkippedOnce() {
        var reading = ResponseReading(mayBeHTTP2: false, requestedEncodings: nil)
        reading.heldOverBytes = 6
        let bytes: [UInt8] = Array("abcdefghij".utf8)
        bytes.withUnsafeBytes { buffer in
            #expect(Array(reading.unseen(UnsafeRawBufferPointer(rebasing: buffer[..<4]))).isEmpty)
            #expect(Array(reading.unseen(buffer)) == Array("cdefghij".utf8))
            #expect(Array(reading.unseen(buffer)) == bytes)
        }
        #expect(reading.heldOverBytes == 0)
    }

    /// Decided at the first byte of the body, not before (a HEAD's body never comes), and once.
    @Test func theDecodingIsDecidedAtTheBodysFirstByte() throws {
        var gzipped = ResponseReading(mayBeHTTP2: false, requestedEncodings: nil)
        gzipped.contentEncoding = "gzip"
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        #expect(try gzipped.decoder(forBodyBytes: none) == nil)
        guard case .undecided = gzipped.decoding else { Issue.record("decided without a byte"); return }
        let decoder = try [UInt8(0x1f)].withUnsafeBytes { try gzipped.decoder(forBodyBytes: $0) }
        #expect(decoder != nil)
        gzipped.contentEncoding = nil
        #expect(try gzipped.decoder(forBodyBytes: none) === decoder)

        var plain = ResponseReading(mayBeHTTP2: false, requestedEncodings: nil)
        #expect(try [UInt8(1)].withUnsafeBytes { try plain.decoder(forBodyBytes: $0) } == nil)
        guard case .none = plain.decoding else { Issue.record("a plain body not decided"); return }
    }

    /// A coding Tern cannot undo comes as it is only when the request asked for it.
    @Test func aCodingNotAskedForAndNotUndoneIsRefused() throws {
        var unasked = ResponseReading(mayBeHTTP2: false, requestedEncodings: nil)
        unasked.contentEncoding = "compress"
        #expect(throws: ContentDecoder.Failure.self) { try [UInt8(1)].withUnsafeBytes { try unasked.decoder(forBodyBytes: $0) } }

        var asked = ResponseReading(mayBeHTTP2: false, requestedEncodings: "compress")
        asked.contentEncoding = "compress"
        #expect(try [UInt8(1)].withUnsafeBytes { try asked.decoder(forBodyBytes: $0) } == nil)
    }

    @Test func onlyALimitedChunkedBodyOverHTTP1IsWatched() {
        #expect(ChunkWatch(Self.head(["Transfer-Encoding": "chunked"]), maximumBodySize: 100) != nil)
        #expect(ChunkWatch(Self.head(["Transfer-Encoding": "gzip, Chunked"]), maximumBodySize: 100) != nil)
        #expect(ChunkWatch(Self.head(["Transfer-Encoding": "chunked"]), maximumBodySize: nil) == nil)
        #expect(ChunkWatch(Self.head(["Content-Length": "10"]), maximumBodySize: 100) == nil)
        #expect(ChunkWatch(Self.head(["Transfer-Encoding": "chunked"], version: "HTTP/2"), maximumBodySize: 100) == nil)
        // An encoded body may be a little larger than its decoding, which the limit counts.
        #expect(ChunkWatch(Self.head(["Transfer-Encoding": "chunked"]), maximumBodySize: 100)?.limit == 100)
        #expect(ChunkWatch(Self.head(["Transfer-Encoding": "chunked", "Content-Encoding": "gzip"]), maximumBodySize: 10_240)?.limit
                    == 10_240 + 10 + 1024)
    }

    @Test func chunksDeclaringMoreThanTheLimitAreCaughtAsTheyAreDeclared() throws {
        var watch = try #require(ChunkWatch(Self.head(["Transfer-Encoding": "chunked"]), maximumBodySize: 100))
        let read = { (text: String) in Array(text.utf8).withUnsafeBytes { watch.read($0) } }
        #expect(read("32\r\n" + String(repeating: "a", count: 50) + "\r\n") == nil)
        #expect(read("3") == nil)
        #expect(read("4\r\n") == 102)
    }
}
#endif
