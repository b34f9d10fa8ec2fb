import Foundation

/// What a cache keeps, and where: its responses in memory, or its index of the files in a
/// directory, one file per URL (see ``CacheFile``). Either way, past `limit` bytes the responses
/// used longest ago go.
///
/// It lives behind the cache's lock, so it does no slow work: files are read, and written under
/// names of their own, outside it; under it they are only renamed into place and removed, so
/// that the index and the directory change together.
struct CacheStore {
    private struct Entry {
        var size: Int
        var lastUse: UInt64
        /// The response itself, in memory; `nil` for one on disk.
        var response: CachedResponse?
        /// Which write of the key's file this is: a reader that found the file damaged drops the
        /// entry only if no newer file has taken its place since.
        var version: UInt64
    }

    /// Where a kept response is.
    enum Found {
        case kept(CachedResponse)
        case file(URL, size: Int, version: UInt64)
    }

    let directory: URL?
    let limit: Int
    private var entries: [String: Entry] = [:]
    private var uses: UInt64 = 0
    private(set) var byteCount = 0
    private(set) var corruptEntriesDropped = 0
    /// How many times a response was looked for.
    private(set) var finds = 0

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
            guard file.pathExtension == CacheFile.fileExtension else { try? manager.removeItem(at: file); continue }
            let values = try? file.resourceValues(forKeys: [.fileSizeKey, .contentModificationDateKey])
            found.append((file.deletingPathExtension().lastPathComponent, values?.fileSize ?? 0, values?.contentModificationDate ?? .distantPast))
        }
        for file in found.sorted(by: { $0.date < $1.date }) {
            uses += 1
            entries[file.name] = Entry(size: file.size, lastUse: uses, response: nil, version: uses)
            byteCount += file.size
        }
        evict()
    }

    /// Where the response kept for `key` is, if one is; marks it used.
    mutating func find(_ key: String) -> Found? {
        finds += 1
        let name = Self.fileName(key)
        guard var entry = entries[name] else { return nil }
        uses += 1
        entry.lastUse = uses
        entries[name] = entry
        if let response = entry.response { return response.url == key ? .kept(response) : nil }
        return file(named: name).map { .file($0, size: entry.size, version: entry.version) }
    }

    /// Forgets `key`'s file, read as `version` and found gone or damaged, unless another has
    /// taken its place since; damage is counted.
    mutating func unreadable(_ key: String, version: UInt64, damaged: Bool) {
        guard entries[Self.fileName(key)]?.version == version else { return }
        if damaged { corruptEntriesDropped += 1 }
        remove(key)
    }

    /// Keeps `response` under `key` in memory, in place of what was there.
    mutating func keep(_ response: CachedResponse, for key: String) {
        remove(key)
        uses += 1
        let size = response.body.count + response.headers.reduce(256) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        entries[Self.fileName(key)] = Entry(size: size, lastUse: uses, response: response, version: uses)
        byteCount += size
        evict()
    }

    /// Moves `temporary`, a whole file of `size` bytes, into place as `key`'s, in place of what
    /// was there; `false` (and `temporary` removed) when it could not be.
    mutating func place(_ temporary: URL, size: Int, for key: String) -> Bool {
        let name = Self.fileName(key)
        guard let destination = file(named: name), rename(temporary.path, destination.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            remove(key)
            return false
        }
        if let replaced = entries.removeValue(forKey: name) { byteCount -= replaced.size }
        uses += 1
        entries[name] = Entry(size: size, lastUse: uses, response: nil, version: uses)
        byteCount += size
        evict()
        return true
    }

    /// Forgets what is kept for `key`.
    mutating func remove(_ key: String) {
        let name = Self.fileName(key)
        guard let entry = entries.removeValue(forKey: name) else { return }
        byteCount -= entry.size
        if let file = file(named: name) { try? FileManager.default.removeItem(at: file) }
    }

    /// Forgets everything.
    mutating func removeAll() {
        for name in entries.keys {
            if let file = file(named: name) { try? FileManager.default.removeItem(at: file) }
        }
        entries = [:]
        byteCount = 0
    }

    /// The file of `key`, for a store in a directory.
    func file(for key: String) -> URL? { file(named: Self.fileName(key)) }

    private func file(named name: String) -> URL? {
        directory?.appendingPathComponent(name).appendingPathExtension(CacheFile.fileExtension)
    }

    /// Drops the least recently used until the store fits its limit.
    private mutating func evict() {
        guard byteCount > limit else { return }
        for (name, entry) in entries.sorted(by: { $0.value.lastUse < $1.value.lastUse }) {
            guard byteCount > limit else { return }
            entries[name] = nil
            byteCount -= entry.size
            if let file = file(named: name) { try? FileManager.default.removeItem(at: file) }
        }
    }

    /// A file's name for `key`: a hash of it, in hex (the key itself is inside, and checked).
    static func fileName(_ key: String) -> String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
