import Foundation

/// Where a cache's responses live: in memory, or in a directory, one file per URL, each written
/// whole under a temporary name and renamed into place, so that a crash or a full disk leaves the
/// old file or the new, never part of one. A file is checked as it is read (its magic, its
/// lengths, a checksum of the rest): one that fails is deleted and counted, never served.
/// Either way, past `limit` bytes the responses used longest ago go.
struct CacheStore {
    private struct Entry {
        var size: Int
        var lastUse: UInt64
        /// The response itself, in memory; `nil` for one on disk.
        var response: CachedResponse?
    }

    let directory: URL?
    let limit: Int
    private var entries: [String: Entry] = [:]
    private var uses: UInt64 = 0
    private(set) var byteCount = 0
    private(set) var corruptEntriesDropped = 0

    /// A store in memory.
    init(limit: Int) {
        directory = nil
        self.limit = limit
    }

    /// A store in `directory`, made if missing; what is there already counts against `limit`,
    /// the least recently used first to go.
    init(directory: URL, limit: Int) throws {
        self.directory = directory
        self.limit = limit
        let manager = FileManager.default
        try manager.createDirectory(at: directory, withIntermediateDirectories: true)
        let files = try manager.contentsOfDirectory(at: directory, includingPropertiesForKeys: [.fileSizeKey, .contentModificationDateKey])
        var found: [(name: String, size: Int, date: Date)] = []
        for file in files {
            // A temporary file is a write a crash cut short.
            guard file.pathExtension == Self.fileExtension else { try? manager.removeItem(at: file); continue }
            let values = try? file.resourceValues(forKeys: [.fileSizeKey, .contentModificationDateKey])
            found.append((file.deletingPathExtension().lastPathComponent, values?.fileSize ?? 0, values?.contentModificationDate ?? .distantPast))
        }
        for file in found.sorted(by: { $0.date < $1.date }) {
            uses += 1
            entries[file.name] = Entry(size: file.size, lastUse: uses, response: nil)
            byteCount += file.size
        }
        evict()
    }

    /// The response kept for `key`, if any (and readable).
    mutating func response(for key: String) -> CachedResponse? {
        let name = Self.fileName(key)
        guard var entry = entries[name] else { return nil }
        uses += 1
        entry.lastUse = uses
        entries[name] = entry
        if let response = entry.response { return response.url == key ? response : nil }
        guard let directory else { return nil }
        let file = directory.appendingPathComponent(name).appendingPathExtension(Self.fileExtension)
        guard let data = try? Data(contentsOf: file), let response = Self.decode(data) else {
            // Gone or damaged: dropped, and counted when there was something to read.
            if FileManager.default.fileExists(atPath: file.path) { corruptEntriesDropped += 1 }
            remove(key)
            return nil
        }
        try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: file.path)
        return response.url == key ? response : nil
    }

    /// Keeps `response` under `key`, in place of what was there; `false` when it could not be
    /// written (what was there is then gone too).
    @discardableResult
    mutating func store(_ response: CachedResponse, for key: String) -> Bool {
        remove(key)
        let name = Self.fileName(key)
        uses += 1
        if let directory {
            let data = Self.encode(response)
            let file = directory.appendingPathComponent(name).appendingPathExtension(Self.fileExtension)
            // Data's atomic write: a temporary file beside it, renamed into place.
            do { try data.write(to: file, options: .atomic) } catch { return false }
            entries[name] = Entry(size: data.count, lastUse: uses, response: nil)
            byteCount += data.count
        } else {
            let size = response.body.count + response.headers.reduce(256) { $0 + $1.key.utf8.count + $1.value.utf8.count }
            entries[name] = Entry(size: size, lastUse: uses, response: response)
            byteCount += size
        }
        evict()
        return true
    }

    /// Forgets what is kept for `key`.
    mutating func remove(_ key: String) {
        let name = Self.fileName(key)
        guard let entry = entries.removeValue(forKey: name) else { return }
        byteCount -= entry.size
        if let directory {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name).appendingPathExtension(Self.fileExtension))
        }
    }

    /// Forgets everything.
    mutating func removeAll() {
        for name in entries.keys {
            if let directory { try? FileManager.default.removeItem(at: directory.appendingPathComponent(name).appendingPathExtension(Self.fileExtension)) }
        }
        entries = [:]
        byteCount = 0
    }

    /// Drops the least recently used until the store fits its limit.
    private mutating func evict() {
        guard byteCount > limit else { return }
        for (name, entry) in entries.sorted(by: { $0.value.lastUse < $1.value.lastUse }) {
            guard byteCount > limit else { return }
            entries[name] = nil
            byteCount -= entry.size
            if let directory { try? FileManager.default.removeItem(at: directory.appendingPathComponent(name).appendingPathExtension(Self.fileExtension)) }
        }
    }

    // MARK: Files

    static let fileExtension = "terncache"
    private static let magic = Data("TERNCACHE1\n".utf8)

    /// A file's name for `key`: a hash of it, in hex (the key itself is inside, and checked).
    static func fileName(_ key: String) -> String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The magic, the head as JSON and its length, the body and its length, and a checksum of
    /// all that.
    static func encode(_ response: CachedResponse) -> Data {
        var head = response
        head.body = Data()
        let json = (try? JSONEncoder().encode(head)) ?? Data()
        var data = magic
        append(UInt64(json.count), to: &data)
        data.append(json)
        append(UInt64(response.body.count), to: &data)
        data.append(response.body)
        append(checksum(data), to: &data)
        return data
    }

    /// The response `data` holds, or `nil` when it is not whole and intact.
    static func decode(_ data: Data) -> CachedResponse? {
        let bytes = [UInt8](data)
        guard bytes.count >= magic.count + 24, bytes.starts(with: magic),
              checksum(Data(bytes[..<(bytes.count - 8)])) == read(bytes, at: bytes.count - 8) else { return nil }
        var offset = magic.count
        let headLength = Int(clamping: read(bytes, at: offset))
        offset += 8
        guard headLength <= bytes.count - offset - 16 else { return nil }
        let head = Data(bytes[offset..<(offset + headLength)])
        offset += headLength
        let bodyLength = Int(clamping: read(bytes, at: offset))
        offset += 8
        guard bodyLength == bytes.count - offset - 8, var response = try? JSONDecoder().decode(CachedResponse.self, from: head) else { return nil }
        response.body = Data(bytes[offset..<(offset + bodyLength)])
        return response
    }

    private static func append(_ value: UInt64, to data: inout Data) {
        withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
    }

    private static func read(_ bytes: [UInt8], at offset: Int) -> UInt64 {
        (0..<8).reduce(0) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
    }

    /// FNV-1a over `data`: against damage, not against forgery (whoever can write the directory
    /// can write any answer into it).
    private static func checksum(_ data: Data) -> UInt64 {
        data.reduce(0xCBF2_9CE4_8422_2325) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01B3 }
    }
}
