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

    /// A rename that refuses an existing name, where one name is the file's at every moment:
    /// renameat2(2) with RENAME_NOREPLACE on Linux, renamex_np(2) with RENAME_EXCL on Apple's
    /// systems. `false` where the system or the file system cannot (glibc before 2.28, kernels
    /// before 3.15, some file systems).
    static func renameAtOnce(_ file: URL, to destination: URL) throws -> Bool {
        #if canImport(Glibc)
        guard let renameNoReplace else { return false }
        return try renamed(renameNoReplace(AT_FDCWD, file.path, AT_FDCWD, destination.path, 1), to: destination)
        #elseif canImport(Darwin)
        return try renamed(renamex_np(file.path, destination.path, UInt32(RENAME_EXCL)), to: destination)
        #else
        return false
        #endif
    }

    /// What a rename's `result` says: moved, or `false` where it cannot be done here; throws
    /// for a name that exists, or another failure.
    private static func renamed(_ result: Int32, to destination: URL) throws -> Bool {
        if result == 0 { return true }
        let code = errno
        if code == EEXIST { throw exists(destination) }
        if code == EINVAL || cannotHere(code) { return false }
        throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
    }

    /// linkat(2), which refuses a name that exists and never follows a link, then the old
    /// name's unlink: for an instant both names are the file's. Without hard links,
    /// FileManager's move, which checks first.
    static func linkThenUnlink(_ file: URL, to destination: URL) throws {
        if linkat(AT_FDCWD, file.path, AT_FDCWD, destination.path, 0) == 0 {
            unlink(file.path)
            return
        }
        let code = errno
        if code == EEXIST { throw exists(destination) }
        guard cannotHere(code) else { throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO) }
        try FileManager.default.moveItem(at: file, to: destination)
    }

    /// Whether `code` says the system or the file system has no such call (FAT, exFAT, SMB,
    /// some FUSE file systems), as against a failure of this move.
    private static func cannotHere(_ code: Int32) -> Bool {
        [EPERM, ENOTSUP, EOPNOTSUPP, ENOSYS, EXDEV, EMLINK].contains(code)
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
