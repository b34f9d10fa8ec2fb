import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Moves a finished download to a destination that must not exist, checked and moved in one
/// step: a check and then a rename would replace a file another program made in between. A
/// file, or a link (even a dangling one), at the destination is refused with
/// `CocoaError.fileWriteFileExists`.
enum ExclusiveMove {
    /// Moves `file` to `destination` unless something is there.
    static func move(_ file: URL, to destination: URL) throws {
        if try !renameAtOnce(file, to: destination) { try linkThenUnlink(file, to: destination) }
    }

    /// renameat2(2) with RENAME_NOREPLACE, where one name is the file's at every moment; `false`
    /// where the system or the file system cannot (not Linux, glibc before 2.28, kernels before
    /// 3.15, some file systems).
    static func renameAtOnce(_ file: URL, to destination: URL) throws -> Bool {
        #if canImport(Glibc)
        guard let renameNoReplace else { return false }
        if renameNoReplace(AT_FDCWD, file.path, AT_FDCWD, destination.path, 1) == 0 { return true }
        switch errno {
        case EEXIST: throw exists(destination)
        case EINVAL, ENOSYS: return false
        case let code: throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        #else
        return false
        #endif
    }

    /// link(2), which refuses a name that exists, then the old name's unlink: for an instant
    /// both names are the file's. Without hard links, FileManager's move, which checks first.
    static func linkThenUnlink(_ file: URL, to destination: URL) throws {
        if link(file.path, destination.path) == 0 {
            unlink(file.path)
            return
        }
        switch errno {
        case EEXIST: throw exists(destination)
        case EPERM, EOPNOTSUPP, EXDEV, EMLINK: try FileManager.default.moveItem(at: file, to: destination)
        case let code: throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
    }

    private static func exists(_ destination: URL) -> CocoaError {
        CocoaError(.fileWriteFileExists, userInfo: [NSFilePathErrorKey: destination.path])
    }

    #if canImport(Glibc)
    private typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32

    /// glibc's `renameat2`, looked up as the process runs: Swift's Glibc module leaves it out.
    private static let renameNoReplace: RenameAt2? = dlsym(nil, "renameat2").map { unsafeBitCast($0, to: RenameAt2.self) }
    #endif
}
