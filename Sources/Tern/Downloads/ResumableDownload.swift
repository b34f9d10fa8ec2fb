import Foundation
import TernTransport

/// What a download that stopped early left behind, and what it takes to go on from there: the
/// bytes already on disk, and the validator that proves the server still has the same file.
///
/// A download that fails or is cancelled after some of its body arrived keeps those bytes when
/// the server gave a strong validator (an `ETag` that is not weak, else `Last-Modified`) and did
/// not compress the body. Tern records them beside the destination; read the record back with
/// ``pending(for:)``, or persist this value yourself (it is `Codable`), and pass it to
/// ``AbstractAPI/download(route:parameters:to:replacing:maximumSize:resumingFrom:options:)``:
///
/// ```swift
/// let resume = ResumableDownload.pending(for: destination)
/// let file = try await api.download(route: route, to: destination, resumingFrom: resume).value
/// ```
///
/// Without a strong validator nothing is kept: a failed download leaves no file behind. The
/// bytes are one download's at a time: a second resumed from them while the first still writes
/// them (a button tapped twice, a tool run again in another terminal) starts over in a file of
/// its own.
public struct ResumableDownload: Sendable, Codable, Hashable {
    /// The URL that answered with the body, after any redirect.
    package let url: URL
    /// The URL the download asked for, before any redirect: the bytes go on only a download of
    /// the same. `nil` in a record an older Tern wrote, which then names `url`.
    package let requested: URL?
    /// Where the finished file goes.
    package let destination: URL
    /// The bytes received so far.
    package let partialFile: URL
    /// How many bytes of the body `partialFile` holds.
    public let offset: Int64
    /// The response's strong `ETag`, or else its `Last-Modified`: sent as `If-Range`, so that the
    /// server sends the rest only if the file has not changed, and the whole file if it has.
    package let validator: String

    /// Creates the value, for a download recorded elsewhere.
    package init(url: URL, requested: URL? = nil, destination: URL, partialFile: URL, offset: Int64, validator: String) {
        self.url = url
        self.requested = requested
        self.destination = destination
        self.partialFile = partialFile
        self.offset = offset
        self.validator = validator
    }

    /// The download to `destination` that stopped early, if Tern kept one and its bytes are
    /// still there. A record is taken only as Tern writes one: a file of this user's own, not a
    /// link, naming a partial file of this user's own beside the destination, named as Tern
    /// names them; in a directory others may write to (`/tmp`), a record planted there could
    /// otherwise have a download write into, move or delete any file the user can.
    public static func pending(for destination: URL) -> ResumableDownload? {
        guard let record = recorded(for: destination), let size = fileSize(of: record.partialFile), size >= record.offset else { return nil }
        return record
    }

    /// The record beside `destination`, if Tern wrote it and its bytes are where Tern keeps
    /// them, however many bytes are left.
    static func recorded(for destination: URL) -> ResumableDownload? {
        let recordFile = recordFile(for: destination)
        // A record is a few hundred bytes: one planted a gigabyte long is not read.
        guard isOwnRegularFile(recordFile), let data = RegularFile.ownContents(of: recordFile, largest: 64 << 10),
              let record = try? JSONDecoder().decode(ResumableDownload.self, from: data),
              record.destination.standardizedFileURL == destination.standardizedFileURL, record.keepsItsBytesBesideItsDestination
        else { return nil }
        return record
    }

    /// Whether the bytes are where Tern keeps a download's: a file of this user's own, not a
    /// link, beside the destination and named as ``partialFile(for:)`` names them. A resume
    /// that says otherwise is not taken, and the download starts over.
    var keepsItsBytesBesideItsDestination: Bool {
        partialFile.deletingLastPathComponent().standardizedFileURL == destination.deletingLastPathComponent().standardizedFileURL
            && Self.isPartialFileName(partialFile.lastPathComponent, of: destination) && Self.isOwnRegularFile(partialFile)
    }

    /// Whether `name` is one ``partialFile(for:)`` gives `destination`: the UUID is checked
    /// too, or the bytes kept for `report.pdf` would pass as those of `report`.
    static func isPartialFileName(_ name: String, of destination: URL) -> Bool {
        let prefix = ".\(OwnFiles.stem(of: destination.lastPathComponent)).", suffix = partialSuffix
        return name.hasPrefix(prefix) && name.hasSuffix(suffix) && UUID(uuidString: String(name.dropFirst(prefix.count).dropLast(suffix.count))) != nil
    }

    /// A new file for a download's bytes, beside `destination` and hidden.
    static func partialFile(for destination: URL) -> URL {
        destination.deletingLastPathComponent().appendingPathComponent(".\(OwnFiles.stem(of: destination.lastPathComponent)).\(UUID().uuidString)\(partialSuffix)")
    }

    static let partialSuffix = ".tern-partial"

    /// Whether `file` is a regular file (not a link to one) that this process's user owns, with
    /// no other name: a hard link to a file elsewhere would have the download write there.
    private static func isOwnRegularFile(_ file: URL) -> Bool {
        var status = stat()
        return lstat(file.path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG && status.st_uid == getuid() && status.st_nlink == 1
    }

    /// Deletes the bytes kept and the record of them: the download will not be resumed. Bytes
    /// that are not where Tern keeps them are not Tern's to delete, and stay.
    public func discard() {
        if keepsItsBytesBesideItsDestination { try? FileManager.default.removeItem(at: partialFile) }
        Self.removeRecord(for: destination)
    }

    /// Removes the record beside `destination`, if a regular file is there: what else has its
    /// name (a directory of the user's, removed whole as an item) is not Tern's.
    static func removeRecord(for destination: URL) {
        let path = recordFile(for: destination).path
        var status = stat()
        guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return }
        _ = unlink(path)
    }

    /// Where Tern records a download to `destination` that can be resumed: a hidden file beside it.
    static func recordFile(for destination: URL) -> URL {
        destination.deletingLastPathComponent().appendingPathComponent(".\(OwnFiles.stem(of: destination.lastPathComponent)).tern-resume")
    }

    /// Writes the record of this download beside its destination.
    func record() throws {
        // The URL is never sent again (the app names the route anew): it keeps no user or
        // password, and its query (a signed link's key) is for the owner's eyes alone.
        let kept = ResumableDownload(url: Self.withoutUser(url), requested: requested.map(Self.withoutUser), destination: destination,
                                     partialFile: partialFile, offset: offset, validator: validator)
        try OwnFiles.replace(Self.recordFile(for: destination), with: JSONEncoder().encode(kept), mode: 0o600)
    }

    /// Whether these bytes are a download of `url`'s, as asked for before any redirect: those
    /// another file's download left at the same destination are not, however alike the two
    /// validators (files deployed together share their `Last-Modified`; revision-number
    /// `ETag`s repeat), or its tail would be spliced onto them. The same file is the same
    /// origin and path: a signed link names it with a new signature in its query each time.
    func isDownload(of url: URL) -> Bool {
        let (held, asked) = (URLComponents(url: requested ?? self.url, resolvingAgainstBaseURL: true),
                             URLComponents(url: url, resolvingAgainstBaseURL: true))
        return held?.scheme?.lowercased() == asked?.scheme?.lowercased() && held?.host?.lowercased() == asked?.host?.lowercased()
            && held?.port == asked?.port && held?.percentEncodedPath == asked?.percentEncodedPath
    }

    /// `url` without a user or password.
    private static func withoutUser(_ url: URL) -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false), components.user != nil || components.password != nil else { return url }
        (components.user, components.password) = (nil, nil)
        return components.url ?? url
    }
}
