import Foundation

/// The file a cookie jar writes before renaming it over its own: named after the jar's file
/// (`.cookies.json.` and a UUID) so that what a write cut short leaves (the app killed during
/// it) is known as the jar's and removed by a later write, and nothing else is.
enum JarTemporaryFile {
    /// A new temporary file's place, beside `file`.
    static func url(for file: URL) -> URL {
        file.deletingLastPathComponent().appendingPathComponent(prefix(of: file) + UUID().uuidString)
    }

    /// Removes the temporary files of `file`'s jars that no write renamed: called with the
    /// folder's lock held (``DirectoryLock``), which a writer holds from making one to renaming
    /// it, and only those a minute old, for one that gave up waiting for the lock writes without
    /// it. Only regular files of this user's own go; a link is left where it is.
    static func removeLeftovers(of file: URL) {
        let folder = file.deletingLastPathComponent()
        let prefix = prefix(of: file)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
        for name in names where name.hasPrefix(prefix) && UUID(uuidString: String(name.dropFirst(prefix.count))) != nil {
            let path = folder.appendingPathComponent(name).path
            var status = stat()
            guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_uid == getuid(),
                  let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date,
                  modified < Date(timeIntervalSinceNow: -60) else { continue }
            _ = unlink(path)
        }
    }

    private static func prefix(of file: URL) -> String { ".\(file.lastPathComponent)." }
}
