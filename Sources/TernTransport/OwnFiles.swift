#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The files Tern opens for a request (an upload's source, a download's partial file), kept out
/// of the last few descriptors the process may have. Its sockets leave 16 to the rest of the
/// process; its files may take half of those, so that many downloads at once under a low limit
/// never take every descriptor: the app, and Dispatch's thread monitor, which stops the process
/// when it cannot open one, always have some. A request short of one waits for it (``lackedADescriptor(_:)``).
package enum OwnFiles {
    /// How many descriptors Tern's files leave to the rest of the process.
    package static let reserve = 8

    /// Opens `path` as `open(2)` does, but fails with `EMFILE` rather than take one of the last
    /// ``reserve`` descriptors: the kernel gives the lowest number free, so one numbered there
    /// means every one below it is taken. A file the refused open made (`O_CREAT | O_EXCL`) is
    /// removed again: a new file for a write, left behind at each write short of a descriptor.
    package static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        let descriptor = systemOpen(path, flags, mode)
        guard descriptor >= 0, isReserved(descriptor) else { return descriptor }
        _ = close(descriptor)
        if flags & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL { _ = unlink(path) }
        errno = EMFILE
        return -1
    }

    /// Creates the file at `path`, which must not exist (`O_EXCL`, never through a link), of
    /// `mode` from its first byte (`nil`: the process's default, as `umask` narrows it), and
    /// writes `data` to it, to the disk itself if `synchronized`: the new file a write renames
    /// over the old one. One that fails leaves nothing. Foundation's atomic write makes its
    /// file readable by all, as the default mode is, and puts it in place so.
    package static func create(_ path: String, with data: Data, mode: mode_t?, synchronized: Bool = false) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode == nil ? 0o666 : 0o600)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        do {
            // A mode wider than the owner's (a recording its team reads) is given before any
            // byte is; `umask` cannot narrow it, as it narrows what `open` asks for.
            if let mode, fchmod(descriptor, mode) != 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            try handle.write(contentsOf: data)
            if synchronized { try handle.synchronize() }
            try handle.close()
        } catch {
            _ = unlink(path)
            throw error
        }
    }

    /// Puts `data` in place of `target`'s bytes, whole or not at all: a new file beside it
    /// (``temporary(beside:)``), made by ``create(_:with:mode:synchronized:)``, renamed over it.
    /// Returns the stamp of the file put in place.
    ///
    /// With `read`, the stamp `target` had when it was read, the new file is not put in place
    /// if `target` has changed since (``ChangedSinceRead``): another process wrote it past the
    /// lock this one holds (one that gave up waiting for a holder stopped in mid-write, which
    /// is this one), and what it wrote is read again first.
    @discardableResult
    package static func replace(_ target: URL, with data: Data, mode: mode_t?, synchronized: Bool = false,
                                ifStill read: FileStamp? = nil) throws -> FileStamp {
        let temporary = temporary(beside: target)
        try create(temporary.path, with: data, mode: mode, synchronized: synchronized)
        // Renaming changes no stamp of the file's own.
        let written = FileStamp(of: temporary.path)
        if let read, FileStamp(of: target.path) != read {
            _ = unlink(temporary.path)
            throw ChangedSinceRead()
        }
        guard rename(temporary.path, target.path) == 0 else {
            let failure = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            _ = unlink(temporary.path)
            throw failure
        }
        return written
    }

    /// A file changed since it was read, and so not replaced.
    package struct ChangedSinceRead: Error {}

    /// Where a new file for `target` is written before it is renamed over it: beside it, as
    /// `.<name>.<UUID>.tmp`, a name no user's file has.
    package static func temporary(beside target: URL) -> URL {
        target.deletingLastPathComponent().appendingPathComponent(".\(stem(of: target.lastPathComponent)).\(UUID().uuidString).tmp")
    }

    /// Whether `fileName` is one ``temporary(beside:)`` gave for a file named `targetName`.
    package static func isTemporary(_ fileName: String, of targetName: String) -> Bool {
        let prefix = "." + stem(of: targetName) + "."
        return fileName.hasPrefix(prefix) && fileName.hasSuffix(".tmp")
            && UUID(uuidString: String(fileName.dropFirst(prefix.count).dropLast(4))) != nil
    }

    /// What the hidden files Tern keeps beside a file named `name` begin with (`.<stem>.`): the
    /// name itself, or where the longest of them (a download's partial file, `.<stem>.<UUID>
    /// .tern-partial`) would pass the 255 bytes a file system takes for a name, its start and a
    /// digest of it whole, so that a name the user's file may have is one Tern's files may have
    /// beside it, and two names share no stem.
    package static func stem(of name: String) -> String {
        let longestSuffix = 52, limit = 255
        guard name.utf8.count + longestSuffix > limit else { return name }
        var start = Substring(name)
        while start.utf8.count + 17 + longestSuffix > limit { start = start.dropLast() }
        return start + "~" + SHA256Digest.hex(Data(name.utf8)).prefix(16)
    }

    /// How long after its last change a temporary file is taken as left by a crash, not as a
    /// write still going on in another process.
    package static let abandonedAfter: TimeInterval = 3600

    /// Removes what crashes left of earlier writes of `target`: its temporary files unchanged
    /// for `age`, and nothing else of the folder it is in. Only regular files of this process's
    /// user go; a link named as one is left where it is.
    package static func removeAbandonedTemporaries(of target: URL, after age: TimeInterval = abandonedAfter) {
        let directory = target.deletingLastPathComponent()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names where isTemporary(name, of: target.lastPathComponent) {
            let path = directory.appendingPathComponent(name).path
            var status = stat()
            guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_uid == getuid() else { continue }
            #if canImport(Darwin)
            let changed = TimeInterval(status.st_mtimespec.tv_sec)
            #else
            let changed = TimeInterval(status.st_mtim.tv_sec)
            #endif
            if Date().timeIntervalSince1970 - changed > age { _ = unlink(path) }
        }
    }

    /// Whether `error`, or one it wraps, says a file could not be opened for want of a
    /// descriptor (`EMFILE`, `ENFILE`): a request then waits for one to be freed, as it does
    /// for a socket.
    package static func lackedADescriptor(_ error: any Error) -> Bool {
        posixCode(of: error).map { $0 == EMFILE || $0 == ENFILE } ?? false
    }

    /// Whether `error`, or one it wraps, says the disk had no room for what was written
    /// (`ENOSPC`, `EDQUOT`, `EFBIG`): room may be made, and the write tried again.
    package static func lackedRoom(_ error: any Error) -> Bool {
        posixCode(of: error).map { $0 == ENOSPC || $0 == EDQUOT || $0 == EFBIG } ?? false
    }

    /// The system's error code in `error` or in the one it wraps (Foundation's file errors wrap
    /// the system's).
    private static func posixCode(of error: any Error) -> Int32? {
        var next: NSError? = error as NSError
        while let error = next {
            if error.domain == NSPOSIXErrorDomain { return Int32(error.code) }
            next = (error.userInfo[NSUnderlyingErrorKey] as? any Error).map { $0 as NSError }
        }
        return nil
    }

    private static func isReserved(_ descriptor: Int32) -> Bool {
        #if os(Linux)
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return false }   // RLIM_INFINITY, which Swift cannot import
        return rlim_t(descriptor) + rlim_t(reserve) >= limit.rlim_cur
        #else
        return false
        #endif
    }
}

// The system's, under a name the type's own method does not hide.
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
