import Foundation
import TernTransport

/// An exclusive advisory lock (`flock`) on a folder, held until ``unlock()``: jars that keep
/// their cookies in one file take it around reading and writing the file, in one process or
/// several. A folder, not a file of its own: no lock file is left beside the user's, and the
/// jar's file itself is replaced by each write, which would drop a lock held on it.
struct DirectoryLock {
    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Locks `folder`, made first (for the user alone) if it is missing, as on an app's first
    /// launch, when two jars write at once too; waits for another holder for `patience` at most
    /// (`0`: one try). The lock, when it was had, and what the try came to.
    static func take(_ folder: URL, patience: TimeInterval) -> (DirectoryLock?, LockWait.Tried) {
        var descriptor = OwnFiles.open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if descriptor < 0, errno == ENOENT,
           (try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true,
                                                     attributes: [.posixPermissions: 0o700])) != nil {
            descriptor = OwnFiles.open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        guard descriptor >= 0 else { return (nil, .unavailable) }
        // Asked again every few milliseconds: a jar holds it for as long as one write takes.
        let deadline = DispatchTime.now() + patience
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let held = errno == EWOULDBLOCK || errno == EINTR
            guard held, DispatchTime.now() < deadline else {
                _ = close(descriptor)
                return (nil, held ? .held : .unavailable)
            }
            usleep(5_000)
        }
        return (DirectoryLock(descriptor: descriptor), .locked)
    }

    /// Lets the next holder in.
    func unlock() {
        _ = close(descriptor)   // which releases the lock
    }
}
