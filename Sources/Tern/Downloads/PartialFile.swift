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
/// Once open, it is the download's alone: another download resumed from the same bytes (a
/// button tapped twice; a command-line tool run again while its first run still downloads) cut
/// the file back under the first, and the first delivered a hole of zeros. Within the process a
/// registry says whose it is; across processes, a POSIX record lock on the open file, which the
/// kernel lets go when the process ends, killed or not, so the bytes stay resumable. Not
/// `flock`: a child process started meanwhile (between its fork and its exec) held that lock
/// after the download let it go, and the download's own next attempt found it taken.
enum PartialFile {
    /// The file is open in another download, which writes it.
    struct InUse: Error {}

    /// Which file a descriptor has open: its device and inode.
    struct Identity: Hashable {
        let device: UInt64
        let inode: UInt64

        /// The file `status` describes.
        init(_ status: stat) {
            (device, inode) = (UInt64(status.st_dev), UInt64(status.st_ino))
        }
    }

    /// The partial files the process's downloads have open, each with the download that writes
    /// it, until it closes the file (``closed(_:)``) or ends (``release(_:)``): a file deleted
    /// meanwhile gives its inode to the next one made, which another download may make.
    static let writers = Locked([Identity: ObjectIdentifier]())

    /// The name of the partial file each download of the process opened last, until the
    /// download ends (``release(_:)``): between its attempts the file is open nowhere, and
    /// neither the writers above nor a record lock keep the sweep of leftovers from it.
    static let openedNames = Locked([ObjectIdentifier: String]())

    /// Opens `file` for `download`; `creating` makes it anew, empty, when there is none (a link
    /// there is refused, not followed). Throws ``InUse`` when another download writes it, or
    /// when it cannot be opened so.
    static func open(_ file: URL, creating: Bool, for download: ObjectIdentifier) throws -> (handle: FileHandle, identity: Identity) {
        let path = file.path
        // Not opened at all when another download here writes it: closing a descriptor of the
        // file would let go of the process's lock on it, which that download holds.
        var named = stat()
        if lstat(path, &named) == 0, let writer = writers.withLock({ $0[Identity(named)] }), writer != download { throw InUse() }
        // Emptied once known to be no other download's, not as it is opened.
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
        let identity = Identity(status)
        let isTheDownloads = writers.withLock { writers in
            if let writer = writers[identity], writer != download { return false }
            writers[identity] = download
            return true
        }
        guard isTheDownloads else {
            _ = close(descriptor)
            throw InUse()
        }
        guard lockForTheProcess(descriptor) else {
            _ = close(descriptor)
            closed(identity)
            throw InUse()
        }
        openedNames.withLock { $0[download] = file.lastPathComponent }
        if creating, ftruncate(descriptor, 0) != 0 {
            let code = errno
            _ = close(descriptor)
            throw NSError(domain: NSPOSIXErrorDomain, code: Int(code), userInfo: [
                NSLocalizedDescriptionKey: "cannot empty the download's partial file \(path): \(String(cString: strerror(code)))",
                NSFilePathErrorKey: path,
            ])
        }
        return (FileHandle(fileDescriptor: descriptor, closeOnDealloc: true), identity)
    }

    /// Takes a write lock on the whole file for the process, unless another process holds one:
    /// held until the process closes a descriptor of the file. Never waits; a descriptor that
    /// takes no lock (a file system without them) is taken as the process's.
    private static func lockForTheProcess(_ descriptor: Int32) -> Bool {
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        guard fcntl(descriptor, F_SETLK, &lock) != 0 else { return true }
        return errno != EAGAIN && errno != EACCES
    }

    /// The file opened as `identity` has been closed: free for another download.
    static func closed(_ identity: Identity?) {
        guard let identity else { return }
        _ = writers.withLock { $0.removeValue(forKey: identity) }
    }

    /// `download` has ended: the files it still had open are free for another.
    static func release(_ download: ObjectIdentifier) {
        writers.withLock { writers in writers = writers.filter { $0.value != download } }
        _ = openedNames.withLock { $0.removeValue(forKey: download) }
    }

    /// Whether `file` still names the file opened as `identity`, not a link or another file put
    /// in its place meanwhile, which a move would deliver instead.
    static func names(_ file: URL, _ identity: Identity) -> Bool {
        var status = stat()
        return lstat(file.path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
            && Identity(status) == identity
    }
}
