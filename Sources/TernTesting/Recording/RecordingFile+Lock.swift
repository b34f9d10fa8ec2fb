import Foundation
import Tern

extension RecordingFile {
    /// An advisory lock (`flock`) on a recording's file, which recorders of other processes take
    /// too, held until ``unlock(removingTheFileItMade:)``. On the file itself, not a lock file
    /// beside it: nothing is left in the user's fixtures folder but the recording, and a lock
    /// file in the temporary folder would not be the same file to processes whose temporary
    /// folders differ. The file is replaced at each write (written whole, then renamed into
    /// place), so a lock held on a file since replaced is let go, and taken on the one there
    /// now, however many times another recorder's writes replace it first.
    struct FileLock {
        private let descriptor: Int32
        private let path: String
        /// Whether the lock made the file: one not there yet is made empty to be locked (an
        /// empty file is an empty recording).
        private let made: Bool

        /// Locks the file at `target`, waiting for another holder for `patience` at most (`0`:
        /// one try). The lock, when it was had, and what the try came to: where the file cannot
        /// be opened (a folder not there or not readable, no descriptor left)
        /// no lock can be had, and the write goes without, failing or not as it would have.
        static func take(_ target: URL, patience: TimeInterval) -> (FileLock?, LockWait.Tried) {
            let path = target.path
            try? FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            // Only a try that found the file not replaced meanwhile counts (a file system whose
            // descriptors and paths never agree, without stable inodes): a file replaced while this
            // waited is another recorder's write, and waiting one's turn behind it costs no try.
            var tries = 0
            while tries < 100 {
                var made = false
                let opened = FileStamp(of: path).identity
                // Never read: not blocking, so that a pipe put at the path meanwhile cannot hold
                // the open until a writer comes.
                var descriptor = OwnFiles.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
                if descriptor < 0, errno == ENOENT {
                    descriptor = OwnFiles.open(path, O_RDONLY | O_NONBLOCK | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
                    made = descriptor >= 0
                    if descriptor < 0, errno == EEXIST {
                        tries += 1
                        continue
                    }
                }
                guard descriptor >= 0 else { break }
                let givingUpAt = Date().addingTimeInterval(patience)
                while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
                    let held = errno == EWOULDBLOCK || errno == EINTR
                    guard held, Date() < givingUpAt else {
                        _ = close(descriptor)
                        return (nil, held ? .held : .unavailable)
                    }
                    usleep(5_000)
                }
                let lock = FileLock(descriptor: descriptor, path: path, made: made)
                if lock.isOnTheFile { return (lock, .locked) }
                _ = close(descriptor)   // replaced while this waited: the lock is on the new file
                if opened == nil || FileStamp(of: path).identity == opened { tries += 1 }
            }
            return (nil, .unavailable)
        }

        /// Lets the next holder in; with `removingTheFileItMade`, after a write that failed,
        /// removes the file the lock made if it is still empty.
        func unlock(removingTheFileItMade: Bool = false) {
            var status = stat()
            if removingTheFileItMade, made, isOnTheFile, fstat(descriptor, &status) == 0, status.st_size == 0 { _ = unlink(path) }
            _ = close(descriptor)   // which lets go of the lock
        }

        /// Whether the lock is on the file at its path now.
        private var isOnTheFile: Bool {
            var held = stat(), there = stat()
            return fstat(descriptor, &held) == 0 && stat(path, &there) == 0 && held.st_dev == there.st_dev && held.st_ino == there.st_ino
        }
    }
}
