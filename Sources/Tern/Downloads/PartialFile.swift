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
///
/// While open, it is the download's alone: an advisory lock (`flock`) keeps out another
/// download resumed from the same bytes (a second launch of the app, resuming what it found),
/// which cut the file back under the first, and the first delivered a hole of zeros.
enum PartialFile {
    /// The file is open in another download, which writes it.
    struct InUse: Error {}

    /// Which file a descriptor has open: its device and inode.
    struct Identity: Equatable {
        let device: UInt64
        let inode: UInt64
    }

    /// Opens `file`, and locks it; `creating` makes it anew, empty, when there is none (a link
    /// there is refused, not followed). Throws ``InUse`` when another download holds it, or
    /// when it cannot be opened so.
    static func open(_ file: URL, creating: Bool) throws -> (handle: FileHandle, identity: Identity) {
        let path = file.path
        // Emptied once locked, not as it is opened: another download may be writing it.
        let flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | (creating ? O_CREAT : 0)
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
        var locked: Int32
        repeat { locked = flock(descriptor, LOCK_EX | LOCK_NB) } while locked != 0 && errno == EINTR
        // A file system without locks (EOPNOTSUPP, ENOLCK) is written as before there were any.
        if locked != 0, errno == EWOULDBLOCK {
            _ = close(descriptor)
            throw InUse()
        }
        if creating, ftruncate(descriptor, 0) != 0 {
            let code = errno
            _ = close(descriptor)
            throw NSError(domain: NSPOSIXErrorDomain, code: Int(code), userInfo: [
                NSLocalizedDescriptionKey: "cannot empty the download's partial file \(path): \(String(cString: strerror(code)))",
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
