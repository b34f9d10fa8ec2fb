#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A regular file opened for reading in a way that never waits: a file swapped for a pipe after
/// it was checked (a pipe's open waits for a writer, its reads for bytes) is refused as it is
/// opened. Read on libcurl's thread, such a pipe held every transfer of the transport; a device
/// such as `/dev/zero` would never end.
package final class RegularFile {
    private var descriptor: Int32
    /// Its size in bytes as it was opened.
    package let size: Int64
    /// The user who owns it.
    package let owner: uid_t

    /// Opens the file at `url`; throws if there is none, or it is not a regular file.
    package init(_ url: URL) throws {
        let path = url.path
        let descriptor = OwnFiles.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw Self.failure(errno, opening: path) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            systemClose(descriptor)
            throw NotARegularFile(path: path)
        }
        self.descriptor = descriptor
        size = Int64(status.st_size)
        owner = status.st_uid
    }

    /// The size of the regular file at `url` now, without opening it; throws if there is none,
    /// or it is not a regular file. A pipe's size is 0: taken for a file's, it would make the
    /// body empty, and an empty body is never read, so the pipe never refused.
    package static func size(of url: URL) throws -> Int64 {
        var status = stat()
        guard stat(url.path, &status) == 0 else { throw failure(errno, opening: url.path) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw NotARegularFile(path: url.path) }
        return Int64(status.st_size)
    }

    /// The bytes of the regular file at `url`, if it is this user's own and no longer than
    /// `largest`: a file planted longer (a sparse gigabyte) is not read into memory at all.
    package static func ownContents(of url: URL, largest: Int) -> Data? {
        guard let opened = try? RegularFile(url), opened.owner == getuid(), opened.size <= largest else { return nil }
        defer { opened.close() }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while data.count < opened.size {
            let count = buffer.withUnsafeMutableBytes { bytes in (try? opened.read(into: bytes.baseAddress!, count: bytes.count)) ?? -1 }
            guard count > 0 else { return count == 0 ? data : nil }
            data.append(contentsOf: buffer[..<count])
        }
        return data
    }

    /// Reads up to `count` bytes into `buffer`; returns how many, 0 at the end of the file.
    package func read(into buffer: UnsafeMutableRawPointer, count: Int) throws -> Int {
        while true {
            let read = systemRead(descriptor, buffer, count)
            if read >= 0 { return read }
            guard errno == EINTR else { throw Self.failure(errno, opening: nil) }
        }
    }

    /// Closes the file; reading after it fails.
    package func close() {
        guard descriptor >= 0 else { return }
        systemClose(descriptor)
        descriptor = -1
    }

    deinit { close() }

    /// The system's error `code`, in words, with the path of the file it could not open.
    private static func failure(_ code: Int32, opening path: String?) -> NSError {
        let reason = String(cString: strerror(code))
        var userInfo: [String: Any] = [NSLocalizedDescriptionKey: path.map { "cannot open \($0): \(reason)" } ?? "cannot read the file: \(reason)"]
        if let path { userInfo[NSFilePathErrorKey] = path }
        return NSError(domain: NSPOSIXErrorDomain, code: Int(code), userInfo: userInfo)
    }
}

/// A file to send that is a device, a pipe or a directory.
package struct NotARegularFile: Error, CustomStringConvertible {
    package let path: String

    package init(path: String) {
        self.path = path
    }

    package var description: String { "\(path) is not a regular file (a device, a pipe or a directory cannot be sent)" }
}

// The system's, under names the type's own methods do not hide.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int { read(descriptor, buffer, count) }
private func systemClose(_ descriptor: Int32) { _ = close(descriptor) }
