#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What tells that a file was replaced or changed: its device, inode, size and time of last
/// change, or that nothing is there. A file another process shares is stamped before it is
/// read, and a write that would replace it first checks it still has that stamp
/// (``OwnFiles/replace(_:with:mode:synchronized:ifStill:)``).
package struct FileStamp: Equatable, Sendable {
    /// `nil` when nothing is there.
    private let fields: [Int]?

    /// The file at `path` now, following links.
    package init(of path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else {
            fields = nil
            return
        }
        #if canImport(Darwin)
        let modified = status.st_mtimespec
        #else
        let modified = status.st_mtim
        #endif
        fields = [Int(status.st_dev), Int(status.st_ino), Int(status.st_size), modified.tv_sec, modified.tv_nsec]
    }

    /// Whether a file was there.
    package var exists: Bool { fields != nil }

    /// Its length in bytes, or `nil` when nothing was there.
    package var size: Int? { fields?[2] }

    /// Its device and inode, which tell one file from another, or `nil` when nothing was there.
    package var identity: [Int]? { fields.map { Array($0.prefix(2)) } }
}
