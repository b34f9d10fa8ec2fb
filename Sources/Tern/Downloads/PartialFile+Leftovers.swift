#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import TernTransport

extension PartialFile {
    /// How long a partial file nobody holds must have gone unwritten to be taken for a leftover.
    static let leftoverAge: TimeInterval = 600

    /// Removes the partial files beside `destination` that downloads killed before they
    /// recorded them left behind (`kill -9`, a crash, a tool that exits on Ctrl-C without
    /// cancelling): no record names them, so nothing would resume them, and nothing else would
    /// remove them.
    ///
    /// Only files named as Tern names them (``ResumableDownload/partialFile(for:)``, a UUID
    /// and all), regular, of this user's own, with no other name, unwritten for
    /// ``leftoverAge``, and held by no download: not this process's (the registries, which
    /// also name a file between a download's attempts), not another's (its record lock).
    static func removeLeftovers(besides destination: URL) {
        let folder = destination.deletingLastPathComponent()
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
        let recorded = ResumableDownload.recorded(for: destination)?.partialFile.lastPathComponent
        for name in names where name != recorded && ResumableDownload.isPartialFileName(name, of: destination) {
            let path = folder.appendingPathComponent(name).path
            var status = stat()
            guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_uid == getuid(), status.st_nlink == 1,
                  let written = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date,
                  -written.timeIntervalSinceNow >= leftoverAge else { continue }
            // Under the registry's lock: a download here registers a file before it locks it,
            // so the descriptor asked and closed here (which lets go of the process's record
            // locks on the file) is closed before any download here takes one.
            writers.withLock { writers in
                guard writers[Identity(status)] == nil, !openedNames.withLock({ $0.values.contains(name) }),
                      !isLockedByAnotherProcess(path) else { return }
                _ = unlink(path)
            }
        }
    }

    /// Whether another process holds a record lock on the file at `path`: a download there
    /// writes it. (Asking from this process never sees this process's own locks, which the
    /// registry answers for.)
    private static func isLockedByAnotherProcess(_ path: String) -> Bool {
        let descriptor = OwnFiles.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0)
        guard descriptor >= 0 else { return true }
        defer { _ = close(descriptor) }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        return fcntl(descriptor, F_GETLK, &lock) != 0 || lock.l_type != Int16(F_UNLCK)
    }
}
