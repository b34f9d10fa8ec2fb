import Foundation
import Tern

extension RecordingFile {
    /// How long a write waits for another holder of the lock before its exchange settles
    /// unwritten, and a retry writes it later.
    static let lockPatience: TimeInterval = 5

    /// How long unwritten exchanges wait for the lock before they are written without it.
    static let longestWait: TimeInterval = 30

    /// Runs `body` holding an advisory lock (`flock`) on the file at `target`, which recorders
    /// of other processes take too. On the file itself, not a lock file beside it: nothing is
    /// left in the user's fixtures folder but the recording, and a lock file in the temporary
    /// folder would not be the same file to processes whose temporary folders differ. The file
    /// is replaced at each write (written whole, then renamed into place), so a lock held on a
    /// file since replaced is let go, and taken on the one there now, however many times another
    /// recorder's writes replace it first. A file not there yet is made
    /// empty to be locked (an empty file is an empty recording), and removed again when `body`
    /// throws and it is still empty. A holder that keeps the lock past `patience` (another
    /// recorder starved of the processor, or one stopped for good) is not written past:
    /// `body` does not run, and `false` is returned. Where the file cannot be opened (a directory there, a folder
    /// not there or not readable, no descriptor left) `body` runs without a lock, and its write
    /// fails or not as it did: an exchange short of a descriptor is kept, and written with the
    /// next.
    @discardableResult
    static func locked(_ target: URL, patience: TimeInterval = lockPatience, _ body: () throws -> Void) rethrows -> Bool {
        let path = target.path
        try? FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        var descriptor: Int32 = -1, created = false
        // Only a try that found the file not replaced meanwhile counts (a file system whose
        // descriptors and paths never agree, without stable inodes): a file replaced while this
        // waited is another recorder's write, and waiting one's turn behind it costs no try.
        // Counted, a recorder that lost that race 100 times wrote without the lock, and dropped
        // what the other added, or the other's next write dropped its exchange.
        var tries = 0
        while tries < 100 {
            created = false
            let opened = fileID(at: path)
            descriptor = OwnFiles.open(path, O_RDONLY | O_CLOEXEC)
            if descriptor < 0, errno == ENOENT {
                descriptor = OwnFiles.open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
                created = descriptor >= 0
                if descriptor < 0, errno == EEXIST {
                    tries += 1
                    continue
                }
            }
            guard descriptor >= 0 else { break }
            var result: Int32
            let givingUpAt = Date().addingTimeInterval(patience)
            var held = false
            repeat {
                result = flock(descriptor, LOCK_EX | LOCK_NB)
                held = result != 0 && (errno == EWOULDBLOCK || errno == EINTR)
                guard held, Date() < givingUpAt else { break }
                usleep(5_000)
            } while true
            if held, patience > 0 {
                _ = close(descriptor)
                return false
            }
            if result != 0 {
                // No lock here (a file system without), or, asked for no patience, a holder that
                // never let go (a test process stopped in a debugger, an editor): written as
                // before there was one, rather than never. The cookie jar's lock does the same.
                _ = close(descriptor)
                descriptor = -1
                break
            }
            if isFile(descriptor, at: path) { break }
            _ = close(descriptor)   // replaced while this waited: the lock is on the new file
            descriptor = -1
            if opened == nil || fileID(at: path) == opened { tries += 1 }
        }
        defer { if descriptor >= 0 { _ = close(descriptor) } }   // closing lets go of the lock
        do {
            try body()
        } catch {
            var held = stat()
            if created, descriptor >= 0, isFile(descriptor, at: path), fstat(descriptor, &held) == 0, held.st_size == 0 { _ = unlink(path) }
            throw error
        }
        return true
    }

    /// The device and inode of the file at `path` now; `nil` when there is none.
    private static func fileID(at path: String) -> [UInt64]? {
        var there = stat()
        return stat(path, &there) == 0 ? [UInt64(there.st_dev), UInt64(there.st_ino)] : nil
    }

    /// Whether `descriptor` is open on the file at `path` now.
    private static func isFile(_ descriptor: Int32, at path: String) -> Bool {
        var held = stat(), there = stat()
        return fstat(descriptor, &held) == 0 && stat(path, &there) == 0 && held.st_dev == there.st_dev && held.st_ino == there.st_ino
    }
}
