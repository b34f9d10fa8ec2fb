import Foundation

/// A body read piece by piece as it is sent, each piece held to its length: a multipart body's
/// boundaries and headers from memory and its files a read at a time (so no copy of the body is
/// made, whatever its size), or on Linux a large file or stream that URLSession sends chunked,
/// with no `Content-Length` to hold it to.
///
/// Each piece gives exactly the length it had when the body was made (the total is announced
/// from those). A piece that ends early, or goes on past its length (a stream with more to
/// give, a file that grew while it was sent), fails the stream with ``BodyLengthMismatch``, as
/// `CurlTransport` fails such a body: nothing past the stated length is sent either way.
package final class SegmentStream: InputStream {
    /// A piece of the body.
    package enum Segment: Sendable {
        case data(Data)
        case file(URL, length: Int64)
        /// A stream, made when it is first read.
        case stream(BodyStream, length: Int64)

        package var length: Int64 {
            switch self {
            case .data(let data): Int64(data.count)
            case .file(_, let length), .stream(_, let length): length
            }
        }
    }

    private let segments: [Segment]
    private var index = 0
    /// How far into the current segment reading has got.
    private var position: Int64 = 0
    private var file: RegularFile?
    /// The stream segment being read, once opened.
    private var stream: InputStream?
    /// Bytes given so far, over all segments.
    private var given: Int64 = 0
    private let length: Int64
    private var status = Stream.Status.notOpen
    private var failure: (any Error)?

    package init(_ segments: [Segment]) {
        self.segments = segments
        length = segments.reduce(0) { $0 + $1.length }
        super.init(data: Data())
    }

    package override func open() {
        if status == .notOpen { status = .open }
    }

    package override func close() {
        file?.close()
        file = nil
        stream?.close()
        stream = nil
        status = .closed
    }

    package override var streamStatus: Stream.Status { status }
    package override var streamError: (any Error)? { failure }
    package override var hasBytesAvailable: Bool { status == .open && index < segments.count }

    package override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>) -> Bool {
        false
    }

    package override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        guard status == .open, len > 0 else { return status == .atEnd ? 0 : -1 }
        while index < segments.count {
            let segment = segments[index]
            let remaining = segment.length - position
            do {
                guard remaining > 0 else {
                    try finish(segment)
                    continue
                }
                let count = try read(segment, into: buffer, upTo: Int(min(Int64(len), remaining)))
                guard count > 0 else { throw BodyLengthMismatch(statedLength: length, actualLength: given) }
                position += Int64(count)
                given += Int64(count)
                return count
            } catch {
                failure = error
                status = .error
                return -1
            }
        }
        status = .atEnd
        return 0
    }

    /// Up to `count` bytes of `segment` from where reading has got; 0 when it has no more.
    private func read(_ segment: Segment, into buffer: UnsafeMutablePointer<UInt8>, upTo count: Int) throws -> Int {
        switch segment {
        case .data(let data):
            let start = data.startIndex + Int(position)
            data.copyBytes(to: buffer, from: start..<(start + count))
            return count
        case .file(let url, _):
            let file = try self.file ?? RegularFile(url)
            self.file = file
            return try file.read(into: buffer, count: count)
        case .stream(let body, _):
            let source = try stream ?? body.makeStream()
            if stream == nil {
                source.open()
                stream = source
            }
            let read = source.read(buffer, maxLength: count)
            if read < 0 { throw source.readFailure }
            return read
        }
    }

    /// Moves past `segment`, read to its length: a stream or a file must end there.
    private func finish(_ segment: Segment) throws {
        // One byte past this segment is one past the whole body's stated length, whatever segments
        // follow: a part's file that grew runs long, however much of the body has been sent.
        let runsLong = BodyLengthMismatch(statedLength: length, actualLength: length + 1)
        switch segment {
        case .stream:
            if let source = stream {
                var extra: UInt8 = 0
                let past = source.read(&extra, maxLength: 1)
                if past > 0 { throw runsLong }
                // Failing at its end is failing: a stream held to its length fails the byte past it.
                if past < 0 { throw source.readFailure }
                source.close()
                stream = nil
            }
        case .file(let url, _):
            // Opened here if it had nothing to read when the body was made.
            let handle = try file ?? RegularFile(url)
            file = handle
            var extra: UInt8 = 0
            if try handle.read(into: &extra, count: 1) > 0 { throw runsLong }
        case .data:
            break
        }
        file?.close()
        file = nil
        index += 1
        position = 0
    }
}
