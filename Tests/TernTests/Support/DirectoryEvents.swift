#if canImport(Glibc)
import Foundation
import Glibc

/// What the kernel saw happen in a directory (inotify), in order: a file created, its mode
/// changed, written, renamed into place. A test reads them after the fact, so that what a write
/// did in between (a file readable by all for a moment) is told without racing it.
final class DirectoryEvents {
    struct Event {
        let name: String
        let mask: UInt32
    }

    private let descriptor: Int32

    init(watching directory: String) throws {
        descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0, inotify_add_watch(descriptor, directory, UInt32(IN_CREATE | IN_ATTRIB | IN_MODIFY | IN_MOVED_TO)) >= 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    deinit { close(descriptor) }

    /// The events since the last call.
    func read() -> [Event] {
        var events: [Event] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { return events }
            var offset = 0
            // Each: wd, mask, cookie, len (4 bytes each), then `len` bytes of name, NUL-padded.
            while offset + 16 <= count {
                let field = { (at: Int) in buffer[offset + at..<offset + at + 4].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
                let length = Int(field(12))
                let name = buffer[offset + 16..<offset + 16 + length].prefix { $0 != 0 }
                events.append(Event(name: String(decoding: name, as: UTF8.self), mask: field(4)))
                offset += 16 + length
            }
        }
    }
}
#endif
