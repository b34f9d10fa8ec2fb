import Foundation

/// A multipart body read part by part as it is sent: boundaries and headers from memory, file
/// parts from their files a read at a time, so no copy of the body is made, in memory or on
/// disk, whatever its size.
///
/// Each file gives exactly the length it had when the body was encoded (the total is announced
/// from those): a file that grew is cut there, and one that shrank fails the stream.
final class MultipartStream: InputStream {
    /// A piece of the body.
    enum Segment {
        case data(Data)
        case file(URL, length: Int64)

        var length: Int64 {
            switch self {
            case .data(let data): Int64(data.count)
            case .file(_, let length): length
            }
        }
    }

    private let segments: [Segment]
    private var index = 0
    /// How far into the current segment reading has got.
    private var position: Int64 = 0
    private var file: FileHandle?
    private var status = Stream.Status.notOpen
    private var failure: (any Error)?

    init(_ segments: [Segment]) {
        self.segments = segments
        super.init(data: Data())
    }

    override func open() {
        if status == .notOpen { status = .open }
    }

    override func close() {
        try? file?.close()
        file = nil
        status = .closed
    }

    override var streamStatus: Stream.Status { status }
    override var streamError: (any Error)? { failure }
    override var hasBytesAvailable: Bool { status == .open && index < segments.count }

    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>) -> Bool {
        false
    }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        guard status == .open, len > 0 else { return status == .atEnd ? 0 : -1 }
        while index < segments.count {
            let segment = segments[index]
            let remaining = segment.length - position
            guard remaining > 0 else {
                try? file?.close()
                file = nil
                index += 1
                position = 0
                continue
            }
            let count = Int(min(Int64(len), remaining))
            do {
                switch segment {
                case .data(let data):
                    let start = data.startIndex + Int(position)
                    data.copyBytes(to: buffer, from: start..<(start + count))
                case .file(let url, _):
                    if file == nil { file = try FileHandle(forReadingFrom: url) }
                    guard let chunk = try file?.read(upToCount: count), !chunk.isEmpty else { throw FileShrank(path: url.path) }
                    chunk.copyBytes(to: buffer, count: chunk.count)
                    position += Int64(chunk.count)
                    return chunk.count
                }
            } catch {
                failure = error
                status = .error
                return -1
            }
            position += Int64(count)
            return count
        }
        status = .atEnd
        return 0
    }

    /// A file part with fewer bytes left than it had when the body was encoded.
    struct FileShrank: Error, CustomStringConvertible {
        let path: String
        var description: String { "\(path) became shorter while it was being sent" }
    }
}
