#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import TernTransport

/// A download's partial file, opened for reading and writing as the answer's head comes: never
/// through a link, and only when it is a regular file of this user's with no other name. Checked
/// when the download was resumed, the file could still be swapped for a link before the head
/// came, and the download would then have truncated and written whatever the link points to.
enum PartialFile {
    /// Which file a descriptor has open: its device and inode.
    struct Identity: Equatable {
        let device: UInt64
        let inode: UInt64
    }

    /// Opens `file`; `creating` makes it anew, empty, when there is none (a link there is refused,
    /// not followed). Throws when it cannot be opened so.
    static func open(_ file: URL, creating: Bool) throws -> (handle: FileHandle, identity: Identity) {
        let path = file.path
        let flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | (creating ? O_CREAT | O_TRUNC : 0)
        let descriptor = OwnFiles.open(path, flags, 0o666)
        guard descriptor >= 0 else {
            let code = errno
            throw NSError(domain: NSPOSIXErrorDomain, code: Int(code), userInfo: [
                NSLocalizedDescriptionKey: "cannot open the download's partial file \(path): \(String(cString: strerror(code)))",
                NSFilePathErrorKey: path,
            ])
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_uid == getuid(), status.st_nlink == 1 else {
            _ = close(descriptor)
            throw CocoaError(.fileWriteNoPermission, userInfo: [
                NSLocalizedDescriptionKey: "the download's partial file \(path) is not a regular file of this user's own with one name",
                NSFilePathErrorKey: path,
            ])
        }
        return (FileHandle(fileDescriptor: descriptor, closeOnDealloc: true), Identity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino)))
    }

    /// Whether `file` still names the file opened as `identity`, not a link or another file put
    /// in its place meanwhile, which a move would deliver instead.
    static func names(_ file: URL, _ identity: Identity) -> Bool {
        var status = stat()
        return lstat(file.path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
            && Identity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino)) == identity
    }
}
