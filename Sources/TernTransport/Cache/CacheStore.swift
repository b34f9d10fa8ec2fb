import Foundation

/// What a cache keeps, and where: its responses in memory, or its index of the files in a
/// directory, one file per URL (see ``CacheFile``). Either way, past `limit` bytes the responses
/// used longest ago go.
///
/// It lives behind the cache's lock, so it does no slow work: files are read, and written under
/// names of their own, outside it; under it they are only renamed into place and removed, so
/// that the index and the directory change together.
///
/// In a directory it touches only the files it could have written: the directory may be the
/// user's, with the user's files in it, and another cache (in this process or another) may be
/// writing there too.
struct CacheStore {
    private struct Entry {
        var size: Int
        var lastUse: UInt64
        /// The response itself, in memory; `nil` for one on disk.
        var response: CachedResponse?
        /// Which write of the key's file this is: a reader that found the file damaged drops the
        /// entry only if no newer file has taken its place since.
        var version: UInt64
        /// When the request that brought the response was sent, by the cache's clock; `nil` for
        /// a file found on disk.
        var requestDate: Date?

        /// What it counts against the limit: a file's whole blocks, the disk it takes (a
        /// server's thousands of empty answers take a block each), or a response's bytes.
        var cost: Int { response == nil ? CacheStore.diskTaken(bySize: size) : size }
    }

    /// The disk a file of `size` bytes takes, in whole blocks of 4 KiB, as most file systems
    /// lay files out.
    static func diskTaken(bySize size: Int) -> Int {
        (size + 4095) / 4096 * 4096
    }

    /// Where a kept response is.
    enum Found {
        case kept(CachedResponse, version: UInt64)
        case file(URL, size: Int, version: UInt64)
    }

    let directory: URL?
    let limit: Int
    private var entries: [String: Entry] = [:]
    /// Each use of an entry, oldest first, from `oldest` on: eviction takes the front, skipping
    /// uses an entry has had since (its `lastUse` is then later), so that it never sorts.
    private var useOrder: [(use: UInt64, name: String)] = []
    private var oldest = 0
    private var uses: UInt64 = 0
    private(set) var byteCount = 0
    private(set) var corruptEntriesDropped = 0
    /// How many times a response was looked for.
    private(set) var finds = 0
    /// How many uses eviction has examined: the work it does, for the tests.
    private(set) var evictionSteps = 0

    /// A store in memory.
    init(limit: Int) {
        directory = nil
        self.limit = limit
    }

    /// A store in `directory`, made if missing; the cache files there already count against
    /// `limit`, the least recently used first to go. Temporary files a crash left are removed
    /// once they are old enough that no other cache can still be writing them.
    init(directory: URL, limit: Int, now: Date = Date()) throws {
        self.directory = directory
        self.limit = limit
        let manager = FileManager.default
        // For the user alone, whatever the umask: whoever may write the directory chooses the
        // answers (the files are checked against damage, not forgery). Made as Foundation
        // makes one, under umask 0 it was every user's to write.
        try manager.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let keys: [URLResourceKey] = [.fileSizeKey, .contentModificationDateKey, .isRegularFileKey]
        // Listed where a link leads: Foundation lists a link to a directory as empty, and the
        // files of earlier runs were then never counted, served nor removed.
        let files = try manager.contentsOfDirectory(at: directory.resolvingSymlinksInPath(), includingPropertiesForKeys: keys)
        var found: [(name: String, size: Int, date: Date)] = []
        for file in files {
            // Never a directory, a link or anything else the cache did not write.
            guard let values = try? file.resourceValues(forKeys: Set(keys)), values.isRegularFile == true else { continue }
            let date = values.contentModificationDate ?? .distantPast
            switch CacheFile.kind(ofName: file.lastPathComponent) {
            case .response(let name) where CacheFile.isOwn(file):
                found.append((name, values.fileSize ?? 0, date))
            case .temporary where now.timeIntervalSince(date) > OwnFiles.abandonedAfter && CacheFile.isOwn(file):
                CacheFile.removeFile(file)
            case .response, .temporary, nil:
                continue
            }
        }
        for file in found.sorted(by: { $0.date < $1.date }) {
            insert(Entry(size: file.size, lastUse: 0, response: nil, version: 0), named: file.name)
        }
        evict()
    }

    /// Where the response kept for `key` is, if one is; marks it used.
    mutating func find(_ key: String) -> Found? {
        finds += 1
        let name = Self.fileName(key)
        guard let entry = entries[name] else { return nil }
        use(name)
        if let response = entry.response { return response.url == key ? .kept(response, version: entry.version) : nil }
        return file(named: name).map { .file($0, size: entry.size, version: entry.version) }
    }

    /// Forgets `key`'s file, read as `version` and found gone or damaged, unless another has
    /// taken its place since; damage is counted. Another user's file is forgotten and left
    /// where it is: not the cache's to delete.
    mutating func unreadable(_ key: String, version: UInt64, damaged: Bool, foreign: Bool = false) {
        let name = Self.fileName(key)
        guard entries[name]?.version == version else { return }
        if damaged { corruptEntriesDropped += 1 }
        guard foreign, let entry = entries.removeValue(forKey: name) else { return remove(key) }
        byteCount -= entry.cost
    }

    /// `key`'s file, read as `version`, was found whole at `size` bytes: written by another
    /// cache on the same directory since this one indexed it.
    mutating func resized(_ key: String, version: UInt64, to size: Int) {
        let name = Self.fileName(key)
        guard let entry = entries[name], entry.version == version, entry.size != size else { return }
        byteCount -= entry.cost
        entries[name]?.size = size
        byteCount += entries[name]?.cost ?? 0
        evict()
    }

    /// What a field of a kept response costs in memory beyond its name's and value's bytes (the
    /// strings' storage, the dictionary's slot), roughly.
    static let costOfAField = 64

    /// Keeps `response` under `key` in memory, in place of what was there (if it may replace it:
    /// ``mayReplace(_:version:requestDate:)``); one larger than the whole store is not kept,
    /// and pushes nothing out.
    mutating func keep(_ response: CachedResponse, for key: String, ifStill version: UInt64? = nil) {
        guard mayReplace(key, version: version, requestDate: response.requestDate) else { return }
        remove(key)
        // Each field and each value kept for `Vary` is counted with what holding it costs
        // besides its bytes: a server names as many as it likes.
        let fields = response.headers.reduce(256) { $0 + $1.key.utf8.count + $1.value.utf8.count + Self.costOfAField }
        let size = response.body.count + response.varying.reduce(fields) { $0 + $1.key.utf8.count + $1.value.utf8.count + Self.costOfAField }
        guard size <= limit else { return }
        insert(Entry(size: size, lastUse: 0, response: response, version: 0, requestDate: response.requestDate), named: Self.fileName(key))
        evict()
    }

    /// Moves `temporary`, a whole file of `size` bytes holding a response asked for at
    /// `requestDate`, into place as `key`'s, in place of what was there (if it may replace it:
    /// ``mayReplace(_:version:requestDate:)``); `false` (and `temporary` removed) when it could
    /// not be, or when it is larger than the whole store.
    mutating func place(_ temporary: URL, size: Int, for key: String, requestDate: Date, ifStill version: UInt64? = nil) -> Bool {
        guard mayReplace(key, version: version, requestDate: requestDate) else {
            CacheFile.removeFile(temporary)
            return false
        }
        let name = Self.fileName(key)
        guard Self.diskTaken(bySize: size) <= limit, let destination = file(named: name), rename(temporary.path, destination.path) == 0 else {
            CacheFile.removeFile(temporary)
            remove(key)
            return false
        }
        if let replaced = entries.removeValue(forKey: name) { byteCount -= replaced.cost }
        insert(Entry(size: size, lastUse: 0, response: nil, version: 0, requestDate: requestDate), named: name)
        evict()
        return true
    }

    /// Whether a response asked for at `requestDate` may replace `key`'s entry: only the write
    /// `version` names, when given, and never one asked for later. A slow answer to an earlier
    /// request (a prefetch) that ends after a later one's would otherwise be served, fresh,
    /// over the newer answer (RFC 9111, §4: the most recent response is the one used).
    private func mayReplace(_ key: String, version: UInt64?, requestDate: Date) -> Bool {
        let entry = entries[Self.fileName(key)]
        if let version, entry?.version != version { return false }
        return entry?.requestDate.map { $0 <= requestDate } ?? true
    }

    /// Forgets what is kept for `key`.
    mutating func remove(_ key: String) {
        let name = Self.fileName(key)
        if let entry = entries.removeValue(forKey: name) { byteCount -= entry.cost }
        // Even one this store has not indexed: another cache on the directory may have kept it
        // since, and would serve what an unsafe request just changed.
        if let file = file(named: name) { CacheFile.removeFile(file) }
    }

    /// Forgets everything it keeps (and only that: other files in its directory stay).
    mutating func removeAll() {
        for name in entries.keys {
            if let file = file(named: name) { CacheFile.removeFile(file) }
        }
        entries = [:]
        useOrder = []
        oldest = 0
        byteCount = 0
    }

    /// The file of `key`, for a store in a directory.
    func file(for key: String) -> URL? { file(named: Self.fileName(key)) }

    private func file(named name: String) -> URL? {
        directory?.appendingPathComponent(name).appendingPathExtension(CacheFile.fileExtension)
    }

    /// Adds `entry` as the newest, counting its bytes.
    private mutating func insert(_ entry: Entry, named name: String) {
        uses += 1
        var entry = entry
        (entry.lastUse, entry.version) = (uses, uses)
        entries[name] = entry
        useOrder.append((uses, name))
        byteCount += entry.cost
        dropStaleUses()
    }

    /// Marks `name`'s entry used now.
    private mutating func use(_ name: String) {
        uses += 1
        entries[name]?.lastUse = uses
        useOrder.append((uses, name))
        dropStaleUses()
    }

    /// Drops the uses of entries used again since, or forgotten, once they outnumber the
    /// entries twice over: each use is dropped once, so a use costs a constant on average, and
    /// a store that keeps and forgets answers under its limit does not grow.
    private mutating func dropStaleUses() {
        if useOrder.count - oldest > 2 * entries.count + 64 {
            useOrder = useOrder[oldest...].filter { entries[$0.name]?.lastUse == $0.use }
            oldest = 0
        }
    }

    /// Drops the least recently used until the store fits its limit.
    private mutating func evict() {
        while byteCount > limit, oldest < useOrder.count {
            let (use, name) = useOrder[oldest]
            oldest += 1
            evictionSteps += 1
            guard let entry = entries[name], entry.lastUse == use else { continue }
            entries[name] = nil
            byteCount -= entry.cost
            if let file = file(named: name) { CacheFile.removeFile(file) }
        }
        if oldest > 1024, oldest * 2 > useOrder.count {
            useOrder.removeFirst(oldest)
            oldest = 0
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
