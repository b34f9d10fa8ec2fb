/// The framing of a chunked HTTP/1.1 body (RFC 9112 §7.1), read from its raw bytes for one
/// thing: how many bytes its chunks declare, counting the size being read.
///
/// libcurl decodes chunks before Tern sees the body, and waits for every byte a chunk declares:
/// a server that declares a chunk of 2⁶³ − 1 bytes and then holds its connection keeps a request
/// until its timeout. Reading the declared sizes as they arrive lets the exchange refuse a body
/// that says it will pass the limit before it sends it, as it refuses a `Content-Length` that does.
///
/// Malformed framing stops the count: libcurl refuses it on its own.
struct ChunkFraming {
    private enum State {
        /// Reading a chunk's size: the value of its hex digits so far.
        case size(UInt64, digits: Int)
        /// Past the size, in its extensions, to the line's end.
        case sizeLineRest(UInt64)
        /// In a chunk's data: how many bytes remain.
        case data(UInt64)
        /// After a chunk's data, to its line end.
        case dataEnd
        /// The last chunk has come (trailers may follow), or the framing is not what it should be.
        case finished
    }

    private var state = State.size(0, digits: 0)
    /// The sizes of the chunks whose size lines have ended.
    private var completed: UInt64 = 0

    /// How many bytes the chunks declare so far: those whose sizes were read, and the size now
    /// being read, which its digits so far already bound from below.
    var declaredBytes: UInt64 {
        switch state {
        case .size(let size, _), .sizeLineRest(let size): completed.addingReportingOverflow(size).overflow ? .max : completed + size
        default: completed
        }
    }

    /// Reads the next raw bytes of the body.
    mutating func read(_ bytes: UnsafeRawBufferPointer) {
        var index = 0
        while index < bytes.count {
            switch state {
            case .size(let size, let digits):
                let byte = bytes[index]
                if let digit = Self.hexValue(byte) {
                    // Past 16 digits a size overflows: saturate, libcurl refuses it.
                    let (shifted, overflow) = size.multipliedReportingOverflow(by: 16)
                    state = .size(overflow ? .max : shifted | UInt64(digit), digits: digits + 1)
                } else if digits > 0, byte == UInt8(ascii: ";") || byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") {
                    state = .sizeLineRest(size)
                } else if digits > 0, byte == UInt8(ascii: "\n") {
                    endSizeLine(size)
                } else {
                    state = .finished
                }
                index += 1
            case .sizeLineRest(let size):
                if bytes[index] == UInt8(ascii: "\n") { endSizeLine(size) }
                index += 1
            case .data(let remaining):
                let taken = min(remaining, UInt64(bytes.count - index))
                index += Int(taken)
                state = taken == remaining ? .dataEnd : .data(remaining - taken)
            case .dataEnd:
                switch bytes[index] {
                case UInt8(ascii: "\r"): break
                case UInt8(ascii: "\n"): state = .size(0, digits: 0)
                default: state = .finished
                }
                index += 1
            case .finished:
                return
            }
        }
    }

    private mutating func endSizeLine(_ size: UInt64) {
        completed = completed.addingReportingOverflow(size).overflow ? .max : completed + size
        state = size == 0 ? .finished : .data(size)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
