import Foundation
import Tern

/// A recording's file as this process writes it: one for each file, shared by every transport
/// recording into it at the time (two tests running side by side), so that none writes over
/// what another added. Entries are added, the file written after each; an exchange that failed
/// without a response waits in memory until one with a response comes, so that a run with no
/// server to reach writes no file of failures (over a good recording, say).
final class RecordingFile: Sendable {
    private struct State {
        var entries: [Kept]
        /// Failures without a response not written yet: written with the next exchange that had
        /// one.
        var pending: [HTTPArchive.Entry] = []
        /// Exchanges whose write found another recorder holding the file: written by a retry a
        /// second later, or with the next write; and how the writes wait for the lock.
        var waiting: [HTTPArchive.Entry] = []
        var wait = LockWait()
        /// Entries written past a holder of the lock: its own write, when it goes on, may drop
        /// them, and the next write under the lock puts them back.
        var writtenPastAHolder: [HTTPArchive.Entry] = []
        /// The file as this process last read or wrote it: a file on disk that is another (an
        /// answer edited by hand, entries another process added) is read again before it is
        /// written, so that what is there is kept.
        var stamp: FileStamp?
        /// How many entries were encoded for the file: one an exchange recorded, and each entry
        /// scrubbed or read again from disk, not every entry at every write.
        var encodings = 0
        /// Exchanges sent to be recorded here that have not ended.
        var inFlight = 0
        /// The values every transport recording here has hidden: each hides them in what the
        /// others add after, as in what they added before.
        var hidden: Set<String> = []
    }

    /// An entry, and its bytes in the file (``HTTPArchive/encodedEntry(_:)``): encoded when first
    /// written, and again once scrubbed; `nil` until then.
    private struct Kept {
        var entry: HTTPArchive.Entry
        var bytes: Data?
    }

    let url: URL
    private let state: Locked<State>

    /// The files open in this process, by their path with links resolved; each lives while a
    /// transport holds it.
    private static let opened = Locked<[String: Weak]>([:])

    private struct Weak {
        weak var file: RecordingFile?
    }

    private init(url: URL, entries: [HTTPArchive.Entry], stamp: FileStamp) {
        self.url = url
        state = Locked(State(entries: entries.map { Kept(entry: $0) }, stamp: stamp))
    }

    /// The entries the file on disk holds when it is not as this process last read or wrote
    /// it, with the values this process's recorders hide hidden; throws when it is no
    /// recording now, so that it is not written over. Returns the file's stamp, taken before
    /// it was read.
    @discardableResult
    private static func reread(_ state: inout State, from url: URL) throws -> FileStamp {
        let stamp = FileStamp(of: target(url).path)
        guard stamp.exists, stamp != state.stamp else { return stamp }
        // A pipe or a device put in its place (whose size is 0) is not written over.
        do {
            _ = try RegularFile.size(of: target(url))
        } catch {
            throw NotARecording(file: url, reason: error)
        }
        // An empty file is no change: one another process began, or this one did to lock it.
        guard stamp.size != 0 else { return stamp }
        state.entries = try HTTPArchive.read(from: url).log.entries.map { Kept(entry: $0) }
        state.stamp = stamp
        let hidden = Redactor.searched(state.hidden)
        for index in state.entries.indices where Redactor.scrub(&state.entries[index].entry, hiding: hidden) {
            state.entries[index].bytes = nil
        }
        return stamp
    }

    /// The entries of the file.
    var entries: [HTTPArchive.Entry] { state.withLock { $0.entries.map(\.entry) } }

    /// How many entries were encoded for the file so far.
    var encodings: Int { state.withLock { $0.encodings } }

    /// An exchange to be recorded here was sent.
    func began() {
        state.withLock { $0.inFlight += 1 }
    }

    /// An exchange to be recorded here ended: its entry, if it has one, is written.
    func ended() {
        state.withLock { $0.inFlight -= 1 }
    }

    /// Waits, for `patience` at most, until the exchanges this process is recording into `url`
    /// have ended and been written: a stream the client left stops, and is written, a moment
    /// after its loop ends, and a test that replays it next in the same run would find nothing.
    static func waitForExchanges(into url: URL, patience: TimeInterval = 5) {
        guard let file = opened.withLock({ $0[resolvedPath(url)]?.file }) else { return }
        let deadline = Date(timeIntervalSinceNow: patience)
        while file.state.withLock({ $0.inFlight > 0 }), Date() < deadline {
            usleep(2_000)
        }
    }

    /// The file at `url`, shared with the transports that have it open; else read, and when
    /// `fresh`, begun anew (the file is written anew at the first exchange recorded). A file
    /// that is there and no recording is an error either way: `record` does not write over it.
    static func opening(_ url: URL, fresh: Bool) throws -> RecordingFile {
        let path = resolvedPath(url)
        return try opened.withLock { files in
            if let file = files[path]?.file {
                _ = try file.state.withLock { try reread(&$0, from: url) }
                return file
            }
            let entries: [HTTPArchive.Entry]
            let stamp = FileStamp(of: target(url).path)
            do {
                entries = try HTTPArchive.read(from: url).log.entries
            } catch {
                guard fresh else { throw error }
                throw NotARecording(file: url, reason: error)
            }
            let file = RecordingFile(url: url, entries: fresh ? [] : entries, stamp: stamp)
            // A run that crashed while it wrote the file left its new file beside it.
            OwnFiles.removeAbandonedTemporaries(of: target(url))
            files = files.filter { $0.value.file != nil }
            files[path] = Weak(file: file)
            return file
        }
    }

    /// `url`'s path with its links resolved, those of the folders it is in too while it is not
    /// there yet: the path a file not yet written is known by is the one it has once written
    /// (a folder reached through a link, as `/var` is `/private/var` on macOS).
    private static func resolvedPath(_ url: URL) -> String {
        var existing = url.standardizedFileURL
        var rest: [String] = []
        while !FileManager.default.fileExists(atPath: existing.path), existing.path != "/" {
            rest.insert(existing.lastPathComponent, at: 0)
            existing = existing.deletingLastPathComponent()
        }
        return rest.reduce(existing.resolvingSymlinksInPath()) { $0.appendingPathComponent($1) }.path
    }

    /// Where `url` leads: the file its links name in turn, there or not yet (a link to a
    /// recording not made yet), so that a write replaces that file, never a link.
    static func target(_ url: URL) -> URL {
        var url = url
        for _ in 0..<32 {
            guard let destination = try? FileManager.default.destinationOfSymbolicLink(atPath: url.path) else { break }
            url = destination.hasPrefix("/") ? URL(fileURLWithPath: destination)
                : url.deletingLastPathComponent().appendingPathComponent(destination).standardizedFileURL
        }
        return url
    }

    /// Adds an entry, after hiding `hidden` (values newly hidden) in those before it, and writes
    /// the file: entries sorted by URL and method (those of one URL in the order added), keys
    /// sorted, pretty printed. The file is assembled from each entry's bytes, encoded once (the
    /// new entry's, and those of entries scrubbed or read again), so that recording the n-th
    /// exchange costs that exchange and one write, not n encodings.
    ///
    /// Another process's recorder of the file (a second `swift test` run, a test's child) is
    /// kept apart by an advisory lock on the file (``locked(_:_:)``), held while the file is read
    /// again and written: without it, both read one version, and the second write dropped what
    /// the first added.
    ///
    /// A recorder that keeps the lock past a few seconds (starved of the processor in a busy
    /// run, or stopped) does not hold the exchange back: it settles, its entry written by a
    /// retry once the lock is free, or without it after a while (`LockWait`).
    func add(_ entry: HTTPArchive.Entry, hiding hidden: [String]) throws {
        try state.withLock { state in
            let entry = hide(hidden, in: entry, of: &state)
            guard entry.response.status != 0 else { return state.pending.append(entry) }
            try write(adding: [entry], to: &state)
        }
    }

    /// Writes `entries` and those waiting under the file's lock, when it is free; else leaves
    /// them waiting for a retry a second later. Behind entries that wait already, the lock is
    /// not waited for.
    private func write(adding entries: [HTTPArchive.Entry], to state: inout State) throws {
        let (lock, tried) = FileLock.take(Self.target(url), patience: state.wait.nextPatience)
        let (next, retry) = state.wait.tried(tried)
        if retry { self.retry() }
        guard next != .wait else {
            lock?.unlock()
            return state.waiting += entries
        }
        do {
            try write(adding: entries, pastAHolder: next == .writePastTheHolder, to: &state)
            lock?.unlock()
        } catch {
            lock?.unlock(removingTheFileItMade: true)
            throw error
        }
    }

    /// Tries again, a second from now, to write the entries waiting. Given up when the write
    /// fails otherwise.
    private func retry() {
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + 1) { [self] in
            state.withLock { state in
                guard state.wait.retryCame() else { return }
                do {
                    try write(adding: [], to: &state)
                } catch {
                    (state.waiting, state.wait) = ([], LockWait())
                }
            }
        }
    }

    /// `entry` with the values every recorder here has hidden hidden, after adding `hidden`
    /// (values newly hidden) to them, and hiding those in the entries before it.
    private func hide(_ hidden: [String], in entry: HTTPArchive.Entry, of state: inout State) -> HTTPArchive.Entry {
        var entry = entry
        Redactor.scrub(&entry, hiding: Redactor.searched(state.hidden))
        state.hidden.formUnion(hidden)
        if !hidden.isEmpty {
            for index in state.entries.indices where Redactor.scrub(&state.entries[index].entry, hiding: hidden) {
                state.entries[index].bytes = nil
            }
            for index in state.pending.indices { Redactor.scrub(&state.pending[index], hiding: hidden) }
            for index in state.waiting.indices { Redactor.scrub(&state.waiting[index], hiding: hidden) }
        }
        return entry
    }

    /// Reads the file again and writes it with `entries`, the failures pending and the entries
    /// waiting, under the lock of this process's transports, and of the file's unless
    /// `pastAHolder`. A file another process wrote since it was read (past the lock this one
    /// held, stopped) is read again and written again, the third time regardless.
    private func write(adding entries: [HTTPArchive.Entry], pastAHolder: Bool, to state: inout State) throws {
        let before = state
        let target = Self.target(url)
        for attempt in 1...3 {
            let read = try Self.reread(&state, from: url)
            if !pastAHolder { try putBackWrittenPastAHolder(&state) }
            let added = state.pending + state.waiting + entries
            state.entries += added.map { Kept(entry: $0) }
            (state.pending, state.waiting) = ([], [])
            do {
                let file = try Self.encoded(&state)
                // Written where a link leads: replacing the file atomically would put a file in
                // the link's place (a fixture linked to a recording kept elsewhere).
                try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
                state.stamp = try Self.replace(target, with: file, ifStill: attempt < 3 ? read : nil)
                if pastAHolder { state.writtenPastAHolder += added }
                return
            } catch is OwnFiles.ChangedSinceRead {
                state = before
            } catch {
                // A write short of a descriptor is tried again with the next exchange, the
                // shortage soon over. An entry the disk would not take (full) is not kept: while
                // kept, it failed every exchange after it.
                if !OwnFiles.lackedADescriptor(error) { state = before }
                throw error
            }
        }
    }

    /// Adds back the entries written past a holder of the lock that the file, read again, lacks:
    /// the holder's write dropped them. Told by their bytes (the file's layout unknown, none
    /// can be told, and none is added).
    private func putBackWrittenPastAHolder(_ state: inout State) throws {
        guard !state.writtenPastAHolder.isEmpty else { return }
        var there = Set<Data>()
        for index in state.entries.indices {
            if let bytes = state.entries[index].bytes {
                there.insert(bytes)
            } else if let bytes = try HTTPArchive.encodedEntry(state.entries[index].entry) {
                state.encodings += 1
                if bytes.count <= Self.largestKeptEncoded { state.entries[index].bytes = bytes }
                there.insert(bytes)
            }
        }
        for entry in state.writtenPastAHolder {
            guard let bytes = try HTTPArchive.encodedEntry(entry), !there.contains(bytes) else { continue }
            state.encodings += 1
            state.entries.append(Kept(entry: entry, bytes: bytes.count <= Self.largestKeptEncoded ? bytes : nil))
        }
        state.writtenPastAHolder = []
    }

    /// Puts `data` in place of `target`'s bytes, whole or not at all: a new file beside it,
    /// renamed over it, of the mode the owner gave the file (narrowed to them, say) from its
    /// first byte, so that a recording's answers are never readable by more than the file was.
    private static func replace(_ target: URL, with data: Data, ifStill read: FileStamp?) throws -> FileStamp {
        var before = stat()
        let kept = stat(target.path, &before) == 0 ? before.st_mode & 0o7777 : nil
        return try OwnFiles.replace(target, with: data, mode: kept, ifStill: read)
    }

    /// The largest entry kept encoded: a larger one (a body of megabytes) is encoded again at
    /// each write, as all were, since its bytes kept beside it would double what a long stream's
    /// recording holds (60 MiB of events took 62 MiB more at its peak).
    static let largestKeptEncoded = 1 << 20

    /// The file's bytes: the entries sorted, each encoded if it is not yet, and assembled; the
    /// archive encoded whole where its layout could not be found.
    private static func encoded(_ state: inout State) throws -> Data {
        let sorted = state.entries.indices.sorted { first, second in
            let (a, b) = (state.entries[first].entry.request, state.entries[second].entry.request)
            return (a.url, a.method, first) < (b.url, b.method, second)
        }
        var pieces: [Data] = []
        pieces.reserveCapacity(sorted.count)
        for index in sorted {
            if let bytes = state.entries[index].bytes {
                pieces.append(bytes)
                continue
            }
            guard let bytes = try HTTPArchive.encodedEntry(state.entries[index].entry) else { break }
            state.encodings += 1
            if bytes.count <= largestKeptEncoded { state.entries[index].bytes = bytes }
            pieces.append(bytes)
        }
        if pieces.count == sorted.count, let file = HTTPArchive.assembled(pieces) { return file }
        state.encodings += sorted.count
        return try HTTPArchive(log: HTTPArchive.Log(entries: sorted.map { state.entries[$0].entry })).encoded()
    }
}

/// A file where a recording should be that is none: not written over.
struct NotARecording: Error, CustomStringConvertible {
    let file: URL
    let reason: any Error

    var description: String {
        "\(file.path) is there and is not a recording, so it is not written over: \(reason). Name another file, or delete this one."
    }
}
