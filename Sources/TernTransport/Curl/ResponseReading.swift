#if os(Linux)
import Foundation

/// What an exchange has read of its response: the head as it arrives, the body's count, its
/// decoding, its chunks' declared sizes, and what libcurl holds over a pause. The loop thread's,
/// in its exchange's ``CurlExchange/owned``; the exchange's part that reads the response
/// (`CurlExchange+Response.swift`) hands the receiver what this lets through.
struct ResponseReading {
    /// The response head as it arrives.
    var head: ResponseHeadReader
    /// The request's own `Accept-Encoding`, if it named one: codings Tern cannot undo come
    /// as they are only when asked for there.
    let requestedEncodings: String?
    /// The final head's `Content-Encoding`, its repeats joined.
    var contentEncoding: String?
    /// How the body is decoded: decided at its first byte (a body that cannot come, such as a
    /// HEAD's, is never judged by its encoding), from ``contentEncoding``.
    private(set) var decoding = Decoding.undecided
    /// The body bytes received.
    var receivedBytes = 0
    /// How many bytes libcurl will hand over again, having held them during a pause.
    var heldOverBytes = 0
    /// Whether libcurl holds the head's last line, refused with a pause while the receiver
    /// judges the head: handed over again on resuming, it is skipped.
    var heldOverHeadEnd = false
    /// Whether libcurl holds receiving paused, for the receiver: resuming it leaves sending as
    /// it is.
    var isReceivingPaused = false
    /// The framing of a chunked body, watched for the sizes its chunks declare; `nil` unless the
    /// body is chunked and limited.
    var chunks: ChunkWatch?

    enum Decoding {
        case undecided
        case none
        case by(ContentDecoder)
    }

    init(mayBeHTTP2: Bool, requestedEncodings: String?) {
        head = ResponseHeadReader(mayBeHTTP2: mayBeHTTP2)
        self.requestedEncodings = requestedEncodings
    }

    /// What of `buffer` the receiver has not had: libcurl hands what it held during a pause
    /// over again.
    mutating func unseen(_ buffer: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        let skipped = min(heldOverBytes, buffer.count)
        heldOverBytes -= skipped
        return UnsafeRawBufferPointer(rebasing: buffer[skipped...])
    }

    /// The body's decoder, if its encoding needs one, decided once the body's first `bytes`
    /// come (none are, for an empty piece).
    mutating func decoder(forBodyBytes bytes: UnsafeRawBufferPointer) throws(ContentDecoder.Failure) -> ContentDecoder? {
        if case .undecided = decoding, !bytes.isEmpty {
            decoding = try ContentDecoder.forBody(contentEncoding: contentEncoding, requested: requestedEncodings).map(Decoding.by) ?? .none
        }
        guard case .by(let decoder) = decoding else { return nil }
        return decoder
    }
}

/// A chunked body's framing, read as it arrives when the body has a limit, to stop at once a
/// body whose chunks declare more than it: libcurl would wait for every declared byte.
struct ChunkWatch {
    private var framing = ChunkFraming()
    /// The most the chunks may declare.
    let limit: UInt64

    /// A watch for the body `response` announces, limited to `maximumBodySize` bytes decoded;
    /// `nil` unless it has a limit and comes in chunks over HTTP/1.
    init?(_ response: ResponseHead, maximumBodySize: Int?) {
        // The version's bytes compared: `hasPrefix` looks for grapheme boundaries at every request.
        guard let maximumBodySize, response.httpVersion?.utf8.starts(with: "HTTP/1".utf8) == true,
              response.headers["Transfer-Encoding"]?.lowercased().contains("chunked") == true else { return nil }
        var limit = UInt64(maximumBodySize)
        // The chunks carry the body encoded, and the limit counts it decoded: an encoded body
        // may be larger than its decoding by a few bytes per block (stored deflate blocks, zstd
        // and brotli headers), never by a thousandth.
        if response.headers["Content-Encoding"] != nil { limit += limit / 1024 + 1024 }
        self.limit = limit
    }

    /// Reads raw body bytes, chunk framing included; returns what the chunks declare once it
    /// passes the limit, else `nil`.
    mutating func read(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        framing.read(bytes)
        let declared = framing.declaredBytes
        return declared > limit ? declared : nil
    }
}
#endif
