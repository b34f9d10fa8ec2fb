import Foundation
import TernTransport

/// An exclusive advisory lock (`flock`) on a folder, held until ``unlock()``: jars that keep
/// their cookies in one file take it around reading and writing the file, in one process or
/// several. A folder, not a file of its own: no lock file is left beside the user's, and the
/// jar's file itself is replaced by each write, which would drop a lock held on it.
struct DirectoryLock {
    private let descriptor: Int32

    /// Locks `folder`, made first (for the user alone) if it is missing, as on an app's first
    /// launch, when two jars write at once too; waits for another holder. `nil` when it cannot be
    /// made, opened or locked, and the caller goes on unlocked, as it did before.
    init?(_ folder: URL) {
        var descriptor = OwnFiles.open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if descriptor < 0, errno == ENOENT,
           (try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true,
                                                     attributes: [.posixPermissions: 0o700])) != nil {
            descriptor = OwnFiles.open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        guard descriptor >= 0 else { return nil }
        var locked: Int32
        repeat { locked = flock(descriptor, LOCK_EX) } while locked != 0 && errno == EINTR
        guard locked == 0 else {
            _ = close(descriptor)
            return nil
        }
        self.descriptor = descriptor
    }

    /// Lets the next holder in.
    func unlock() {
        _ = close(descriptor)   // which releases the lock
    }
}
