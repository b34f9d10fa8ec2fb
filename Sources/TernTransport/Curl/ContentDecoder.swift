#if os(Linux)
import CTernCurl
import Foundation

/// Undoes a response body's `Content-Encoding` as it arrives (gzip, deflate, brotli, zstd, or
/// several stacked) and checks that each compressed stream ends whole.
///
/// libcurl 7.88 takes a gzip stream cut short for a whole one: a server that sends 20 of a
/// body's 31 compressed bytes, with a `Content-Length` of 20, had `{"ok":tru` handed over as the
/// answer to `{"ok":true}`. Decoding here, Tern sees each stream's end, or its absence, and a
/// body that is not what its encoding says fails the request.
///
/// Pulled, not pushed: ``next()`` makes one piece of at most ``pieceSize`` bytes at a time, so
/// a receiver that pauses or stops is handed no more than it asked for, and a compression bomb
/// meets the body's limit piece by piece, not after a whole read has been decoded.
final class ContentDecoder {
    /// What Tern asks servers for, when the request names no encodings of its own: what the
    /// system's libraries can undo.
    static let accepted = Family.allCases.filter(\.isAvailable).map(\.name).joined(separator: ", ")

    /// The largest piece of decoded body handed over at once.
    static let pieceSize = 64 * 1024

    /// The most codings one body may stack; libcurl refused more than five.
    static let maximumCodings = 4

    /// Why a body could not be decoded.
    enum Failure: Error, Equatable {
        /// A coding Tern cannot undo, and the request did not ask for.
        case unknownCoding(String)
        /// More codings than ``ContentDecoder/maximumCodings``.
        case tooManyCodings(Int)
        /// The library that undoes it could not be loaded, or made no decoder.
        case noDecoder(coding: String)
        /// The bytes are not the coding they claim; the decoder's word for why.
        case corrupt(coding: String, reason: String)
        /// Bytes came after the compressed stream ended.
        case trailingBytes(coding: String)
        /// The body ended before its compressed stream did.
        case truncated(coding: String)

        /// What went wrong, in words.
        var reason: String {
            switch self {
            case .unknownCoding(let coding): "the response's body is encoded as \"\(coding)\", which was not asked for and cannot be undone"
            case .tooManyCodings(let count): "the response's body names \(count) encodings, more than \(ContentDecoder.maximumCodings)"
            case .noDecoder(let coding): "the response's body is in \(coding), and no decoder for it could be made"
            case .corrupt(let coding, let reason): "the response's body is not valid \(coding) (\(reason))"
            case .trailingBytes(let coding): "bytes follow the end of the response body's \(coding) stream"
            case .truncated(let coding): "the response's body ended before its \(coding) stream did: it was cut short"
            }
        }
    }

    /// The codings Tern undoes, each with the library libcurl links for it.
    enum Family: CaseIterable {
        case gzip, deflate, brotli, zstd

        init?(_ coding: String) {
            switch coding {
            case "gzip", "x-gzip": self = .gzip
            case "deflate": self = .deflate
            case "br": self = .brotli
            case "zstd": self = .zstd
            default: return nil
            }
        }

        /// Its name in `Accept-Encoding`.
        var name: String {
            switch self {
            case .gzip: "gzip"
            case .deflate: "deflate"
            case .brotli: "br"
            case .zstd: "zstd"
            }
        }

        /// Whether its library is there.
        var isAvailable: Bool {
            switch self {
            case .gzip, .deflate: tern_coding_available(Int32(TERN_CODING_GZIP)) != 0
            case .brotli: tern_coding_available(Int32(TERN_CODING_BROTLI)) != 0
            case .zstd: tern_coding_available(Int32(TERN_CODING_ZSTD)) != 0
            }
        }
    }

    /// One coding to undo, with the input it has not yet used.
    private final class Stage {
        let coding: String
        let family: Family
        var decoder: OpaquePointer?
        var input = Data()
        /// Whether a stream (a gzip member) is under way, rather than not yet begun or ended.
        var isInStream = false
        /// Whether zlib may hold output it has not handed over: its last call filled the piece.
        var mayHoldOutput = false
        /// Whether any input came at all: an empty body is an empty body, in any coding.
        var sawInput = false
        /// Whether a stream (a gzip member) has ended.
        var hasEnded = false

        init(coding: String, family: Family) {
            self.coding = coding
            self.family = family
        }

        deinit { tern_decoder_free(decoder) }
    }

    /// The codings in the order they were applied: the body as it came goes into the last,
    /// undone first, and the first makes the decoded body.
    private let stages: [Stage]

    /// A decoder for a response whose `Content-Encoding` is `header`, or `nil` when the body
    /// needs none (no header, identity only) or is to be handed over as it came: every coding
    /// Tern cannot undo is one `requested`, the request's own `Accept-Encoding`, names.
    /// A function, not a failable initializer, which would allocate the decoder before it
    /// failed: most bodies name no coding, and every response comes here.
    static func forBody(contentEncoding header: String?, requested: String?) throws(Failure) -> ContentDecoder? {
        guard let header else { return nil }
        let codings = header.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty && $0 != "identity" }
        guard !codings.isEmpty else { return nil }
        let families = codings.map { Family($0).flatMap { $0.isAvailable ? $0 : nil } }
        let unknown = zip(codings, families).filter { $1 == nil }.map(\.0)
        if let coding = unknown.first {
            // Asked for by name (or by "*"): the caller undoes it, as the header tells them.
            let asked = Self.acceptable(requested ?? "")
            guard unknown.allSatisfy({ asked.contains($0) || asked.contains("*") }) else { throw .unknownCoding(coding) }
            return nil
        }
        guard codings.count <= Self.maximumCodings else { throw .tooManyCodings(codings.count) }
        return ContentDecoder(stages: zip(codings, families).map { Stage(coding: $0, family: $1!) })
    }

    private init(stages: [Stage]) {
        self.stages = stages
    }

    /// The codings an `Accept-Encoding` value accepts: those it names without `q=0`.
    static func acceptable(_ value: String) -> Set<String> {
        Set(value.split(separator: ",").compactMap { item in
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let name = parts.first, !name.isEmpty else { return nil }
            let refused = parts.dropFirst().contains { $0.hasPrefix("q=") && (Double($0.dropFirst(2)) ?? 1) == 0 }
            return refused ? nil : name
        })
    }

    /// Takes the next bytes of the body as it came.
    func push(_ bytes: UnsafeRawBufferPointer) {
        guard let last = stages.last, !bytes.isEmpty else { return }
        last.input.append(bytes.bindMemory(to: UInt8.self))
        last.sawInput = true
    }

    /// The next piece of the decoded body, or `nil` until more of the body comes.
    func next() throws(Failure) -> Data? {
        try produce(from: 0)
    }

    /// Throws unless every stream ended whole, once the body has: a body cut short ends the
    /// request, not just its stream.
    func finish() throws(Failure) {
        for stage in stages where stage.sawInput && (stage.isInStream || !stage.input.isEmpty || !stage.hasEnded) {
            throw .truncated(coding: stage.coding)
        }
    }

    /// A piece out of stage `index`, fed from the stage after it (or the body) as it needs.
    private func produce(from index: Int) throws(Failure) -> Data? {
        let stage = stages[index]
        while true {
            if let piece = try decodePiece(stage), !piece.isEmpty { return piece }
            guard index + 1 < stages.count, let more = try produce(from: index + 1) else { return nil }
            stage.input.append(more)
            stage.sawInput = true
        }
    }

    /// Decodes what `stage` holds into one piece; `nil` when it needs more input first.
    private func decodePiece(_ stage: Stage) throws(Failure) -> Data? {
        guard !stage.input.isEmpty || stage.mayHoldOutput else { return nil }
        // Sized to what the input may make, not zeroed: most bodies are small.
        let capacity = min(Self.pieceSize, max(16 * 1024, stage.input.count * 8))
        guard let piece = malloc(capacity) else { throw .corrupt(coding: stage.coding, reason: "no memory for its decoding") }
        var made = 0
        do throws(Failure) {
            decoding: while made < capacity, !stage.input.isEmpty || stage.mayHoldOutput {
                if !stage.isInStream {
                    guard try begin(stage) else { break }
                }
                var consumed = 0, produced = 0
                let result = stage.input.withUnsafeBytes { input in
                    tern_decode(stage.decoder, input.baseAddress, input.count, &consumed, piece + made, capacity - made, &produced)
                }
                stage.input.removeFirst(consumed)
                made += produced
                switch result {
                case 0 where consumed == 0 && produced == 0, 2:   // nothing more until more input comes: never spin
                    stage.mayHoldOutput = false
                    break decoding
                case 0:    // going on: with the piece full, the decoder may hold more
                    stage.mayHoldOutput = made == capacity
                case 1:    // a stream's end: another gzip member or zstd frame may follow
                    stage.isInStream = false
                    stage.hasEnded = true
                    stage.mayHoldOutput = false
                default:
                    throw .corrupt(coding: stage.coding, reason: tern_decoder_message(stage.decoder).map { String(cString: $0) } ?? "its data is corrupt")
                }
            }
        } catch {
            free(piece)
            throw error
        }
        guard made > 0 else {
            free(piece)
            return nil
        }
        // A small piece gives back what it did not use.
        let kept = made < capacity / 2 ? realloc(piece, made) ?? piece : piece
        return Data(bytesNoCopy: kept, count: made, deallocator: .free)
    }

    /// Starts the next stream of `stage` once there is enough input to tell its framing; returns
    /// whether it began.
    private func begin(_ stage: Stage) throws(Failure) -> Bool {
        switch stage.family {
        case .gzip:
            // After a member's end, only another member may follow.
            if stage.hasEnded {
                guard let first = stage.input.first else { return false }
                guard first == 0x1F, stage.input.count < 2 || stage.input[stage.input.startIndex + 1] == 0x8B else {
                    throw .trailingBytes(coding: stage.coding)
                }
                guard stage.input.count >= 2 else { return false }
            }
            try open(stage, as: TERN_CODING_GZIP)
        case .deflate:
            guard !stage.hasEnded else { throw .trailingBytes(coding: stage.coding) }
            // "deflate" means zlib's framing, but some servers send the raw stream: zlib's header
            // is two bytes whose value is a multiple of 31, with deflate's method in the first.
            guard stage.input.count >= 2 else { return false }
            let first = Int(stage.input[stage.input.startIndex]), second = Int(stage.input[stage.input.startIndex + 1])
            let isZlib = first & 0x0F == 8 && first >> 4 <= 7 && (first << 8 | second) % 31 == 0
            try open(stage, as: isZlib ? TERN_CODING_ZLIB : TERN_CODING_RAW_DEFLATE)
        case .brotli:
            guard !stage.hasEnded else { throw .trailingBytes(coding: stage.coding) }
            try open(stage, as: TERN_CODING_BROTLI)
        case .zstd:
            // Frames may follow one another; the decoder reads the next one's magic itself.
            if stage.decoder == nil { try open(stage, as: TERN_CODING_ZSTD) }
        }
        stage.isInStream = true
        return true
    }

    /// Gives `stage` a decoder for `coding`: zlib's starts over when it has one.
    private func open(_ stage: Stage, as coding: Int) throws(Failure) {
        if let decoder = stage.decoder {
            guard tern_decoder_restart(decoder, Int32(coding)) == 0 else { throw .corrupt(coding: stage.coding, reason: "its decoder could not start over") }
        } else {
            guard let decoder = tern_decoder_new(Int32(coding)) else { throw .noDecoder(coding: stage.coding) }
            stage.decoder = decoder
        }
    }
}
#endif
