#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// One kept response as a file: a magic line, the head as JSON and its length, the body and
/// its length, and a checksum of all that, so that a file damaged on disk is found as it is read.
///
/// Reading and writing one happen outside the cache's lock, which every request takes: a file is only ever written under a
/// name of its own and renamed into place, so a reader finds the old file whole, the new one
/// whole, or none.
enum CacheFile {
    /// What reading a file found.
    enum Reading: Equatable {
        case intact(CachedResponse)
        /// No file: removed since the cache's index was read.
        case missing
        /// A file this version of Tern did not write: dropped, not counted as damage.
        case otherFormat
        case damaged
        /// A file another user owns, put in the cache's place by whoever may write its
        /// directory: never the answer, and not the cache's to remove.
        case foreign
        /// A file of this format larger than this cache keeps: another cache on the directory,
        /// with a larger limit, wrote it. Not this cache's answer, and not its to remove.
        case tooLarge
        /// Not opened for want of a descriptor (the process or the system had none left): the
        /// file is left as it is, neither served nor dropped, to be read once there is one.
        case unopened
    }

    static let fileExtension = "terncache"
    private static let family = Data("TERNCACHE".utf8)
    private static let magic = family + Data("2\n".utf8)

    /// The bytes of a file for `response`.
    static func encode(_ response: CachedResponse) -> Data {
        var head = response
        head.body = Data()
        let json = (try? JSONEncoder().encode(head)) ?? Data()
        var data = Data(capacity: magic.count + json.count + response.body.count + 24)
        data.append(magic)
        append(UInt64(json.count), to: &data)
        data.append(json)
        append(UInt64(response.body.count), to: &data)
        data.append(response.body)
        append(data.withUnsafeBytes { checksum($0) }, to: &data)
        return data
    }

    /// What `data`, a file's bytes, holds.
    static func decode(_ data: Data) -> Reading {
        guard data.starts(with: magic) else { return data.starts(with: family) ? .otherFormat : .damaged }
        return data.withUnsafeBytes { bytes -> Reading in
            guard bytes.count >= magic.count + 24,
                  checksum(UnsafeRawBufferPointer(rebasing: bytes[..<(bytes.count - 8)])) == read(bytes, at: bytes.count - 8) else { return .damaged }
            var offset = magic.count
            let headLength = Int(clamping: read(bytes, at: offset))
            offset += 8
            guard headLength <= bytes.count - offset - 16 else { return .damaged }
            let head = Data(bytes[offset..<(offset + headLength)])
            offset += headLength
            let bodyLength = Int(clamping: read(bytes, at: offset))
            offset += 8
            guard bodyLength == bytes.count - offset - 8, var response = try? JSONDecoder().decode(CachedResponse.self, from: head) else { return .damaged }
            response.body = Data(bytes[offset..<(offset + bodyLength)])
            return .intact(response)
        }
    }

    /// Reads the file at `url`, which the cache indexed at `size` bytes, and marks it used now,
    /// so that a cache opened later drops the files used longest ago first. A file of another
    /// size may be another cache's newer write to the same directory, and is read and checked
    /// like any; one larger than `largest`, more than the cache would ever write, is not read
    /// at all, whatever size it was indexed at (one planted a gigabyte long would be read whole
    /// into memory).
    ///
    /// What took the file's place is not the cache's, and is neither read nor waited on: a
    /// link (to `/dev/zero`, read until memory ran out), a pipe (whose open waits for a writer),
    /// a directory, another user's file. A file that grows as it is read is read no further than it could be whole.
    static func read(_ url: URL, size: Int, largest: Int) -> (reading: Reading, size: Int) {
        let descriptor = OwnFiles.open(url.path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return (errno == ENOENT ? .missing : errno == EMFILE || errno == ENFILE ? .unopened : .damaged, 0) }
        defer { closeFile(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return (.damaged, 0) }
        guard status.st_uid == getuid() else { return (.foreign, 0) }
        let found = Int(status.st_size)
        // Even at the size it was indexed at: the index takes what was there when it opened.
        guard found <= largest else {
            // Only its first bytes, to tell a file of another format from a damaged one.
            let start = readFile(descriptor, upTo: magic.count) ?? Data()
            return (start.starts(with: magic) ? .tooLarge : start.starts(with: family) ? .otherFormat : .damaged, found)
        }
        guard let data = readFile(descriptor, upTo: max(found, largest) + 1) else { return (.damaged, found) }
        let reading = decode(data)
        if case .intact = reading { _ = futimens(descriptor, nil) }
        return (reading, data.count)
    }

    /// Up to `limit` bytes from `descriptor`, to its end; `nil` when reading fails.
    private static func readFile(_ descriptor: Int32, upTo limit: Int) -> Data? {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while data.count < limit {
            let count = buffer.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress!, min($0.count, limit - data.count)) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            data.append(contentsOf: buffer[..<count])
        }
        return data
    }

    /// Writes `data` to a new file beside `destination`, under a name only the cache writes,
    /// readable by the user alone (a private cache keeps what was answered to credentials);
    /// returns it, to be renamed into place. A write that fails (a full disk, no descriptor
    /// outside those Tern leaves to the process) leaves nothing.
    static func writeTemporary(_ data: Data, beside destination: URL) throws -> URL {
        let temporary = OwnFiles.temporary(beside: destination)
        try OwnFiles.create(temporary.path, with: data, mode: 0o600)
        return temporary
    }

    /// What a file in a cache's directory is, by its name: a kept response's (named by the
    /// hash of its key, see ``CacheStore/fileName(_:)``), a write in progress, or not the
    /// cache's at all (`nil`), which the cache never touches.
    enum Kind: Equatable {
        case response(name: String)
        case temporary
    }

    static func kind(ofName fileName: String) -> Kind? {
        let suffix = "." + fileExtension
        let isHash = { (name: Substring) in
            name.utf8.count == 16 && name.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
        }
        if fileName.hasSuffix(suffix), isHash(fileName.dropLast(suffix.utf8.count)) {
            return .response(name: String(fileName.dropLast(suffix.utf8.count)))
        }
        // Exactly as `writeTemporary` names one: a user's `.<hash>.terncache.backup` is not.
        let hash = fileName.dropFirst().prefix(16)
        if isHash(hash), OwnFiles.isTemporary(fileName, of: String(hash) + suffix) {
            return .temporary
        }
        return nil
    }

    private static func append(_ value: UInt64, to data: inout Data) {
        withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
    }

    private static func read(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// A checksum of `bytes`, against damage, not forgery (whoever can write the directory can
    /// write any answer into it): four words at a time, each lane a multiply chain, in which a
    /// changed word changes every product after it.
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        let factor: UInt64 = 0x9E37_79B9_7F4A_7C15
        var lanes: (UInt64, UInt64, UInt64, UInt64) = (0xCBF2_9CE4_8422_2325, 1, 2, 3)
        var offset = 0
        while offset + 32 <= bytes.count {
            lanes.0 = (lanes.0 ^ read(bytes, at: offset)) &* factor
            lanes.1 = (lanes.1 ^ read(bytes, at: offset + 8)) &* factor
            lanes.2 = (lanes.2 ^ read(bytes, at: offset + 16)) &* factor
            lanes.3 = (lanes.3 ^ read(bytes, at: offset + 24)) &* factor
            offset += 32
        }
        var sum = UInt64(bytes.count)
        func fold(_ lane: UInt64) { sum = ((sum ^ lane) &* factor) ^ (sum >> 29) }
        fold(lanes.0)
        fold(lanes.1)
        fold(lanes.2)
        fold(lanes.3)
        while offset < bytes.count {
            sum = (sum ^ UInt64(bytes[offset])) &* factor
            offset += 1
        }
        return sum ^ (sum >> 32)
    }

    /// Whether the file at `url` (a link not followed) is this user's own: the cache writes no
    /// other, and another user's may be an answer of their choosing.
    static func isOwn(_ url: URL) -> Bool {
        var status = stat()
        return lstat(url.path, &status) == 0 && status.st_uid == getuid()
    }

    /// Removes the cache's file at `url`, if a regular file is there: what took its place (a
    /// directory of the user's, removed whole as an item; a link; a pipe) is not the cache's.
    static func removeFile(_ url: URL) {
        var status = stat()
        // Another user's file in its place is not the cache's (see `Reading.foreign`).
        guard lstat(url.path, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_uid == getuid() else { return }
        _ = unlink(url.path)
    }
}

// The system's, under names the type's own methods do not hide.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int { read(descriptor, buffer, count) }
private func closeFile(_ descriptor: Int32) { _ = close(descriptor) }
