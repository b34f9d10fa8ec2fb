import Foundation

/// Why a download failed before it was sent: the folder its destination names is not there (or
/// is no folder), and Tern does not make one, which a mistyped path would then create.
struct MissingFolder: Error, CustomStringConvertible {
    let folder: URL

    var description: String {
        "its folder \(folder.path) does not exist; create it first, with FileManager's createDirectory(at:withIntermediateDirectories:)"
    }

    /// The failure for a download to `destination` whose folder is missing, or `nil` when the
    /// folder is there.
    static func check(_ destination: URL) -> APIError? {
        let folder = destination.deletingLastPathComponent()
        var isFolder: ObjCBool = false
        guard !FileManager.default.fileExists(atPath: folder.path, isDirectory: &isFolder) || !isFolder.boolValue else { return nil }
        return .fileFailed(.init(reason: .writeFailed, destination: destination, underlying: MissingFolder(folder: folder)))
    }
}
