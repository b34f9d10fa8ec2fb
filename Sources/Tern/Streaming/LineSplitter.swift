/// A byte stream cut into lines as its chunks arrive, a line split across chunks joined, none
/// longer than a cap: the first step of reading a streamed response by lines or by events.
///
/// A value: it takes a chunk and returns the lines it completed; no I/O.
struct LineSplitter {
    /// Which bytes end a line.
    enum Ends {
        /// LF, and CRLF (the CR dropped): text lines and NDJSON.
        case lineFeed
        /// CR, LF, or CRLF: Server-Sent Events (WHATWG HTML, "Interpreting an event stream").
        case carriageReturnOrLineFeed
    }

    /// Why a line was refused: it passed the cap before it ended.
    struct LineTooLong: Error, Equatable {
        /// The cap, in bytes.
        let maximumLength: Int
    }

    let ends: Ends
    /// The most bytes one line may have, its end not counted.
    let maximumLength: Int
    /// The line begun and not yet ended.
    private var pending: [UInt8] = []
    /// Whether the last byte read was a CR that ended a line: an LF right after it is part of
    /// the same end, even in the next chunk.
    private var afterCarriageReturn = false

    init(ends: Ends, maximumLength: Int) {
        self.ends = ends
        self.maximumLength = maximumLength
    }

    /// The lines `chunk` completes, without their ends.
    mutating func lines(in chunk: some Sequence<UInt8>) throws(LineTooLong) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        for byte in chunk {
            let wasAfterCarriageReturn = afterCarriageReturn
            afterCarriageReturn = false
            switch (byte, ends) {
            case (UInt8(ascii: "\n"), .lineFeed):
                if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
                lines.append(handedOver())
                startLine()
            case (UInt8(ascii: "\n"), .carriageReturnOrLineFeed):
                if !wasAfterCarriageReturn {
                    lines.append(handedOver())
                    startLine()
                }
            case (UInt8(ascii: "\r"), .carriageReturnOrLineFeed):
                lines.append(handedOver())
                startLine()
                afterCarriageReturn = true
            default:
                // A CR waiting for its LF may stand one past the cap.
                guard pending.count < maximumLength || (ends == .lineFeed && pending.count == maximumLength && byte == UInt8(ascii: "\r")) else {
                    throw LineTooLong(maximumLength: maximumLength)
                }
                pending.append(byte)
            }
        }
        return lines
    }

    /// The line ended, in storage of its own and of its own size: sharing the pending line's,
    /// each line after a long one, empty lines too, held a buffer the long one's size, and a
    /// chunk of line ends made tens of thousands of them at once.
    private func handedOver() -> [UInt8] {
        guard !pending.isEmpty else { return [] }
        return [UInt8](unsafeUninitializedCapacity: pending.count) { buffer, count in
            count = buffer.initialize(fromContentsOf: pending)
        }
    }

    /// Begins the next line, the one before handed over: its storage is kept for the next,
    /// unless it grew past a few kilobytes, which one long line would otherwise hold for ever.
    private mutating func startLine() {
        pending.removeAll(keepingCapacity: pending.capacity <= 4096)
    }

    /// The last line, when the stream ended without ending it; `nil` when it ended with a line end.
    mutating func finish() -> [UInt8]? {
        defer { pending.removeAll() }
        return pending.isEmpty ? nil : pending
    }
}
