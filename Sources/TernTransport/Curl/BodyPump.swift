#if os(Linux)
import Foundation

/// A request body's stream or file, read on a dispatch queue a little ahead of libcurl, which
/// takes the bytes on the loop's thread. A stream may wait for its bytes (a recording in
/// progress, bytes fetched from elsewhere), a file may sit on a slow disk: read on the loop's
/// thread, a slow stream held every other transfer of the transport for as long as each of its
/// reads waited.
///
/// The source is opened by the first read, once its request is about to be written, so that an
/// upload waiting its turn holds no descriptor; it is held to the body's stated length as it is read:
/// one that ends early or runs long fails with ``BodyLengthMismatch``, and nothing past the
/// stated length is read. Its state is behind a lock; the source is read by one step at a time.
final class BodyPump: @unchecked Sendable {   // unchecked: its source, an InputStream, is touched only by the step the lock hands it to
    /// Where the bytes come from.
    enum Source {
        case stream(InputStream)
        case file(URL)
    }

    /// What a take found.
    enum Taken {
        /// This many bytes, copied into the buffer.
        case bytes(Int)
        /// None yet: `ready` is called once there are, or the body has ended.
        case waiting
        /// The body has ended, every byte taken.
        case end
        /// Reading failed, or the body was not its stated length.
        case failed(any Error)
    }

    /// How much is read at once, and ahead of libcurl at most: in pieces of libcurl's own size, a
    /// large file went to the server markedly slower than reading it on the loop's thread; in
    /// pieces of this size, as fast (see the Benchmarks article).
    static let pieceSize = 256 * 1024
    static let capacity = 2 * pieceSize

    private struct State {
        /// Bytes read and not yet taken, oldest first, and how far into the first taking has got.
        var pieces: [Data] = []
        var offset = 0
        var buffered = 0
        /// How the source ended, once it has.
        var end: End?
        /// Whether a step is reading the source, which no other may then touch.
        var isReading = false
        /// Whether the exchange is done with the body.
        var isClosed = false
        /// Whether the source has been closed, or is being: once, by whoever set this.
        var isSourceClosed = false
        /// Whether a take found nothing, and waits for `ready`.
        var isWaitedFor = false
    }

    private enum End {
        case finished
        case failed(any Error)
    }

    private let state = Locked(State())
    /// Where the source is read: a queue of the pump's own, which gets a thread of its own when
    /// the others are busy. On the system's shared queues, a source waiting for its bytes would
    /// hold one of the few threads as many as the cores, and with them the app's work there.
    private let queue = DispatchQueue(label: "tern.body")
    private let length: Int64?
    private let ready: @Sendable () -> Void
    private let source: Source
    /// The source opened, and how much of it was read: the reading step's alone.
    private var opened: Opened?
    private var sourceBytes: Int64 = 0

    private enum Opened {
        case stream(InputStream)
        case file(RegularFile)
    }

    /// A pump for `source` of the stated `length`, if known, which calls `ready` (on another
    /// thread) when a take found nothing and there is now something to take.
    init(_ source: Source, length: Int64?, ready: @escaping @Sendable () -> Void) {
        self.source = source
        self.length = length
        self.ready = ready
    }

    /// Starts reading ahead, if it has not.
    func start() {
        let starts = state.withLock { state in
            guard !state.isReading, !state.isClosed, state.end == nil, state.buffered < Self.capacity else { return false }
            state.isReading = true
            return true
        }
        if starts { queue.async { self.readAhead() } }
    }

    /// Copies up to `buffer.count` bytes into `buffer`.
    func take(into buffer: UnsafeMutableRawBufferPointer) -> Taken {
        let taken: Taken = state.withLock { state in
            guard state.buffered > 0 else {
                switch state.end {
                case .finished?: return .end
                case .failed(let error)?: return .failed(error)
                case nil:
                    state.isWaitedFor = true
                    return .waiting
                }
            }
            var copied = 0
            while copied < buffer.count, let first = state.pieces.first {
                let count = min(buffer.count - copied, first.count - state.offset)
                let start = first.startIndex + state.offset
                first.copyBytes(to: UnsafeMutableRawBufferPointer(rebasing: buffer[copied..<(copied + count)]), from: start..<(start + count))
                copied += count
                state.offset += count
                if state.offset == first.count {
                    state.pieces.removeFirst()
                    state.offset = 0
                }
            }
            state.buffered -= copied
            return .bytes(copied)
        }
        // Room again: read on.
        if case .bytes = taken { start() }
        return taken
    }

    /// Stops reading and closes the source, now or as the read under way returns.
    func close() {
        let closesNow = state.withLock { state in
            state.isClosed = true
            state.pieces = []
            state.buffered = 0
            guard !state.isReading, !state.isSourceClosed else { return false }
            state.isSourceClosed = true
            return true
        }
        if closesNow { closeSource() }
    }

    /// Reads pieces while there is room, on a dispatch queue; closes the source at its end.
    private func readAhead() {
        var goesOn = true
        while goesOn {
            let result = Result { try nextPiece() }
            let (wakes, closes): (Bool, Bool)
            (goesOn, wakes, closes) = state.withLock { state in
                state.isReading = false
                if !state.isClosed {
                    switch result {
                    case .success(let (piece, isLast)?):
                        state.pieces.append(piece)
                        state.buffered += piece.count
                        if isLast { state.end = .finished }
                    case .success(nil):
                        state.end = .finished
                    case .failure(let error):
                        state.end = .failed(error)
                    }
                }
                let wakes = state.isWaitedFor
                state.isWaitedFor = false
                let goesOn = !state.isClosed && state.end == nil && state.buffered < Self.capacity
                state.isReading = goesOn
                let closes = !goesOn && (state.isClosed || state.end != nil) && !state.isSourceClosed
                if closes { state.isSourceClosed = true }
                return (goesOn, wakes, closes)
            }
            if closes { closeSource() }
            if wakes { ready() }
        }
    }

    /// The next piece of the source, and whether it is the last; `nil` at its end. Throws if
    /// reading failed, or the source was not its stated length: the piece that reaches it is
    /// given only once the source has been seen to end there, so that libcurl, which asks for
    /// nothing past the stated length, never sends a body that runs long.
    private func nextPiece() throws -> (Data, isLast: Bool)? {
        if let length, sourceBytes == length {
            // Only for a stated length of 0: a longer body ends with its last piece.
            try checkEnd(at: length)
            return nil
        }
        let size = length.map { min($0 - sourceBytes, Int64(Self.pieceSize)) } ?? Int64(Self.pieceSize)
        var piece = Data(count: Int(size))
        let count = try piece.withUnsafeMutableBytes { buffer in
            try buffer.baseAddress.map { try read(into: $0, count: buffer.count) } ?? 0
        }
        guard count > 0 else {
            // Before the stated end the source must not end.
            if let length { throw BodyLengthMismatch(statedLength: length, actualLength: sourceBytes) }
            return nil
        }
        sourceBytes += Int64(count)
        guard let length, sourceBytes == length else { return (piece.prefix(count), isLast: false) }
        try checkEnd(at: length)
        return (piece.prefix(count), isLast: true)
    }

    /// Throws if the source, read to its stated `length`, goes on.
    private func checkEnd(at length: Int64) throws {
        var extra: UInt8 = 0
        if try read(into: &extra, count: 1) > 0 { throw BodyLengthMismatch(statedLength: length, actualLength: length + 1) }
    }

    /// Reads up to `count` bytes of the source, opening it first.
    private func read(into buffer: UnsafeMutableRawPointer, count: Int) throws -> Int {
        switch try opened ?? open() {
        case .stream(let stream):
            let read = stream.read(buffer.assumingMemoryBound(to: UInt8.self), maxLength: count)
            guard read >= 0 else { throw stream.readFailure }
            return read
        case .file(let file):
            return try file.read(into: buffer, count: count)
        }
    }

    private func open() throws -> Opened {
        let opened: Opened
        switch source {
        case .stream(let stream):
            stream.open()
            opened = .stream(stream)
        case .file(let url):
            opened = .file(try RegularFile(url))
        }
        self.opened = opened
        return opened
    }

    private func closeSource() {
        switch opened {
        case .stream(let stream): stream.close()
        case .file(let file): file.close()
        case nil: break
        }
        opened = nil
    }
}
#endif
