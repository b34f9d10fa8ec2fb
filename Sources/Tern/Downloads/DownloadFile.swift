import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The file a download writes, from the request's first attempt to its end: a hidden partial
/// file beside the destination, moved into place only once the body is complete and accepted.
///
/// Attempts go on from the bytes already on disk when they can: a resumed download, a retry
/// after the connection was lost. Each such attempt asks for the rest with `Range` and
/// `If-Range`, and the answer's head decides (``target(for:)``) whether its body is appended,
/// replaces the file, or goes to memory as an error body; or whether the attempt must start
/// over without a range. When the request fails, the bytes stay for a later resume if they can
/// be resumed, and are deleted if not.
@usableFromInline
final class DownloadFile: Sendable {
    /// Where a response's body goes.
    enum Target: Equatable {
        /// Into memory: an error body, for the error and the delegate to read.
        case memory
        /// Into the file, after the `offset` bytes already there; `total` is the whole body's
        /// length when known.
        case file(offset: Int64, total: Int64?)
        /// Nowhere: the server did not continue where asked, so the attempt starts over.
        case restart
    }

    private struct State {
        var partialFile: URL
        var handle: FileHandle?
        /// Chunks received but not yet written: written a mebibyte at a time, since a write per
        /// network chunk made the disk fall behind the network, and chunks pile up in memory.
        var unwritten = Data()
        /// How many bytes of the body the partial file holds, counting those not yet written.
        var offset: Int64 = 0
        /// The body's total length, when the response said.
        var total: Int64?
        /// Where this attempt's bytes started: what an earlier one had written.
        var resumedBytes: Int64 = 0
        /// The strong validator of the body on disk, if it has one.
        var validator: String?
        var url: URL?
        /// The URL the first attempt asked for, before any redirect.
        var requested: URL?
        /// The resume the download was given, until its first attempt shows whether it is one of
        /// the URL asked for.
        var resume: ResumableDownload?
        /// The offset the attempt in flight asked for, if it asked for a range.
        var askedOffset: Int64?
        /// The body's next bytes that the file holds already: the byte before the offset, which
        /// a resumed attempt asks for again, and which must come back the same.
        var overlap = Data()
        /// Whether the request asks for a range of its own (a `Range` header set before Tern's):
        /// a 206 is then the part it asked for.
        var asksOwnRange = false
        var isPrepared = false
        var isClosed = false
        /// Whether the attempt's body goes to the file (not to memory, as an error's does).
        var bodyInFile = false
        /// The file the partial file's name had when it was opened.
        var identity: PartialFile.Identity?
    }

    let destination: URL
    let replacing: Bool
    /// The largest file accepted, in bytes, or `nil` for any size.
    let maximumSize: Int?
    private let state: Locked<State>

    init(destination: URL, replacing: Bool, maximumSize: SizeLimit = .unlimited, resumingFrom resume: ResumableDownload?) {
        self.destination = destination
        self.replacing = replacing
        self.maximumSize = maximumSize.bytes
        var state = State(partialFile: ResumableDownload.partialFile(for: destination))
        // A resume whose bytes are not where Tern keeps them is not taken: the download starts over.
        if let resume, resume.destination.standardizedFileURL == destination.standardizedFileURL, resume.keepsItsBytesBesideItsDestination {
            state.partialFile = resume.partialFile
            state.offset = resume.offset
            state.validator = resume.validator
            state.url = resume.url
            // Kept if the download ends before it is sent (a refresh that fails, a cancel): its
            // record still names the URL asked for.
            state.requested = resume.requested
            state.resume = resume
        }
        self.state = Locked(state)
        // Off the request's path: a folder of many files takes a while to list.
        DispatchQueue.global(qos: .utility).async { PartialFile.removeLeftovers(besides: destination) }
    }

    /// The partial files it opened are another download's to take from now on.
    deinit {
        PartialFile.release(ObjectIdentifier(self))
    }

    /// Adds the headers that ask for the rest of the body, when there are bytes to go on from.
    /// Called before each attempt is sent.
    func prepare(_ request: inout URLRequest) {
        let asksOwnRange = request.value(forHTTPHeaderField: "Range") != nil
        state.withLock { state in
            state.asksOwnRange = asksOwnRange
            state.overlap = Data()
            state.bodyInFile = false
            // What an attempt cut short had gathered goes to disk first, or out of the count.
            try? Self.close(&state)
            if !state.isPrepared {
                state.isPrepared = true
                state.requested = request.url
                if let resume = state.resume, let url = request.url, !resume.isDownload(of: url) {
                    // Another URL's bytes at this destination: the download starts over, in a file of its own.
                    state.partialFile = ResumableDownload.partialFile(for: destination)
                    (state.offset, state.validator, state.url) = (0, nil, nil)
                }
                state.resume = nil
                // A resumed download goes on from the bytes really there, no more.
                let size = fileSize(of: state.partialFile) ?? 0
                if size < state.offset { state.offset = size }
            }
            guard state.offset > 0, let validator = state.validator else {
                state.askedOffset = nil
                return
            }
            // From the last byte held, not the first one missing: bytes already whole are
            // answered with that byte again (a 206), not refused (a 416) and fetched anew.
            let from = state.offset - 1
            state.askedOffset = from
            request.setValue("bytes=\(from)-", forHTTPHeaderField: "Range")
            request.setValue(validator, forHTTPHeaderField: "If-Range")
            // Offsets count the bytes as stored: a compressed answer would not line up with them.
            request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        }
    }

    /// Where the body of `response` goes, and, for the file, opens it. Throws a `URLError` when
    /// the response cannot be the file (a part of it nobody asked for), or the file cannot be
    /// made.
    func target(for response: ResponseHead) throws -> Target {
        try state.withLock { state in
            guard !state.isClosed else { return .memory }
            let asked = state.askedOffset
            switch response.statusCode {
            case 206 where asked != nil:
                guard let range = ContentRange(response.headers["Content-Range"]), range.start == asked, range.start < state.offset,
                      Self.response(response, keeps: state.validator),
                      Self.isIdentityEncoded(response) else { return .restart }
                let handle: FileHandle, identity: PartialFile.Identity
                do {
                    (handle, identity) = try PartialFile.open(state.partialFile, creating: false, for: ObjectIdentifier(self))
                } catch is PartialFile.InUse {
                    // Another download resumed from these bytes writes them: this one starts
                    // over, in a file of its own.
                    state.partialFile = ResumableDownload.partialFile(for: destination)
                    (state.offset, state.validator) = (0, nil)
                    return .restart
                }
                state.identity = identity
                try handle.seek(toOffset: UInt64(range.start))
                state.overlap = try handle.read(upToCount: Int(state.offset - range.start)) ?? Data()
                try handle.truncate(atOffset: UInt64(state.offset))
                state.handle = handle
                state.bodyInFile = true
                state.resumedBytes = range.start
                // Of a length not known (`bytes 10-99/*`), the range's end is the file's: a body
                // shorter or longer than the range it names is not delivered as the whole.
                state.total = range.total ?? range.end + 1
                return .file(offset: range.start, total: state.total)
            case 416 where asked != nil:
                return .restart
            case 206 where !state.asksOwnRange:
                // A part nobody asked for is the file only when it is the whole of it: kept as
                // the whole, any other part would be a file cut short, delivered as complete.
                let part = response.headers["Content-Range"]
                guard let range = ContentRange(part), range.start == 0, range.total == range.end + 1 else {
                    var info: [String: Any] = [NSLocalizedDescriptionKey:
                        "the server answered with a part of the file (\(part?.prefix(100) ?? "no Content-Range")), which the request did not ask for"]
                    info[NSURLErrorFailingURLErrorKey] = response.url
                    throw URLError(.badServerResponse, userInfo: info)
                }
                fallthrough
            case 200..<300:
                // A body announced larger than the file may be is refused at its head
                // (`ExchangeState.accept`), with no file opened for it: the refusal neither
                // waits for a descriptor nor empties the bytes kept on disk.
                if let maximumSize, Self.isIdentityEncoded(response), let length = response.contentLength, length > maximumSize {
                    return .file(offset: 0, total: length)
                }
                // The whole body: whatever was on disk goes.
                (state.handle, state.identity) = try openAnew(&state)
                state.bodyInFile = true
                state.offset = 0
                state.resumedBytes = 0
                // A range the request asked for itself is fetched again whole, not resumed: the
                // rest of it is no open-ended range, and one would add the file's rest to it.
                state.validator = Self.isIdentityEncoded(response) && !state.asksOwnRange ? Self.strongValidator(of: response) : nil
                state.url = response.url
                let length = response.contentLength ?? -1
                state.total = Self.isIdentityEncoded(response) && length >= 0 ? length : nil
                return .file(offset: 0, total: state.total)
            default:
                return .memory
            }
        }
    }

    /// Opens the partial file, emptied; one that another download resumed from the same bytes
    /// holds is left to it, and this download's bytes go to a new file of their own.
    private func openAnew(_ state: inout State) throws -> (FileHandle, PartialFile.Identity) {
        do {
            return try PartialFile.open(state.partialFile, creating: true, for: ObjectIdentifier(self))
        } catch is PartialFile.InUse {
            state.partialFile = ResumableDownload.partialFile(for: destination)
            return try PartialFile.open(state.partialFile, creating: true, for: ObjectIdentifier(self))
        }
    }

    /// Appends a chunk of the body. Throws when it cannot be written, once the request has
    /// ended (a late chunk from a cancelled transfer), or ``DownloadRestart`` when the bytes asked
    /// for again differ from those held.
    func write(_ chunk: Data) throws {
        try state.withLock { state in
            guard state.handle != nil, !state.isClosed else { throw CancellationError() }
            let held = min(state.overlap.count, chunk.count)
            if held > 0 {
                // A byte that differs is a file that changed under its validator (or on disk):
                // the bytes held belong to another file, and the download starts over.
                guard chunk.prefix(held).elementsEqual(state.overlap.prefix(held)) else { throw DownloadRestart() }
                state.overlap.removeFirst(held)
            }
            state.unwritten.append(held == 0 ? chunk : chunk.dropFirst(held))
            state.offset += Int64(chunk.count - held)
            if state.unwritten.count >= Self.writeSize { try Self.flush(&state) }
        }
    }

    /// How many bytes are gathered before they are written.
    private static let writeSize = 1 << 20

    /// Writes what is gathered; on failure, forgets it, so that the offset counts only bytes on disk.
    private static func flush(_ state: inout State) throws {
        guard !state.unwritten.isEmpty, let handle = state.handle else { return }
        defer { state.unwritten.removeAll(keepingCapacity: true) }
        do {
            try handle.write(contentsOf: state.unwritten)
        } catch {
            state.offset -= Int64(state.unwritten.count)
            throw error
        }
    }

    /// Writes what is gathered and closes the file, stamped as written now: another process's
    /// sweep of leftovers takes a file unwritten for ten minutes and held by no lock, as this
    /// one is while its retry waits, after a server that went quiet.
    private static func close(_ state: inout State) throws {
        defer {
            if let handle = state.handle {
                _ = futimens(handle.fileDescriptor, nil)
                try? handle.close()
                PartialFile.closed(state.identity)
            }
            state.handle = nil
        }
        try flush(&state)
    }

    /// Closes the file after the attempt's last chunk, writing what is gathered; throws the file
    /// system's error when that cannot be written, or a `URLError` when fewer bytes arrived than
    /// the response announced.
    func endOfBody() throws {
        try state.withLock { state in
            try Self.close(&state)
            if let total = state.total, state.offset != total {
                throw URLError(.networkConnectionLost)
            }
        }
    }

    /// The bytes the file holds so far, resumed ones included.
    var length: Int64 { state.withLock { $0.offset } }

    /// Starts over: the bytes on disk will not be asked for again.
    func discardBytes() {
        state.withLock { state in
            if let handle = state.handle {
                try? handle.close()
                PartialFile.closed(state.identity)
            }
            state.handle = nil
            state.unwritten.removeAll()
            try? FileManager.default.removeItem(at: state.partialFile)
            state.offset = 0
            state.validator = nil
        }
    }

    /// Moves the complete body of `response` to the destination; its in-memory body is written
    /// first when none went to the file (a response accepted although not a 2xx).
    @usableFromInline
    func deliver(_ response: Response) throws(APIError) -> DownloadedFile {
        // A body read into memory (a status the validation accepts though it is no 2xx) is held
        // to the file's limit as one written to the file is.
        if let maximumSize, response.body.count > maximumSize {
            throw .responseTooLarge(.init(limit: maximumSize, receivedBytes: response.body.count, declaredLength: nil, method: response.method,
                                          url: response.url, statusCode: response.statusCode, isDownload: true))
        }
        do {
            let resumed = try move(body: response.body)
            return DownloadedFile(fileURL: destination, response: response, resumedBytes: resumed)
        } catch is CancellationError {
            throw .cancelled
        } catch let error as CocoaError where error.code == .fileWriteFileExists {
            throw .fileFailed(.init(reason: .destinationExists, destination: destination, underlying: error))
        } catch {
            throw .fileFailed(.init(reason: .moveFailed, destination: destination, underlying: error))
        }
    }

    /// Moves the body into place; returns how many bytes were resumed. Throws
    /// `CancellationError`, leaving the bytes as ``abandon()`` kept them, once the request was
    /// cancelled: its promise says so, and the caller may already be resuming from them.
    private func move(body: Data) throws -> Int64 {
        try state.withLock { state in
            guard !state.isClosed else { throw CancellationError() }
            state.isClosed = true
            let manager = FileManager.default
            defer {
                // Moved, or not movable: either way no longer the download's to keep; nor the
                // bytes an earlier download kept for the destination, which nothing can resume now.
                try? manager.removeItem(at: state.partialFile)
                ResumableDownload.recorded(for: destination)?.discard()
                ResumableDownload.removeRecord(for: destination)
            }
            try Self.close(&state)
            // A body that went to the file is moved as it is: a file gone meanwhile (deleted
            // under the download) fails the move, never delivers an empty file.
            if !state.bodyInFile {
                let (handle, identity) = try openAnew(&state)
                defer { PartialFile.closed(identity) }
                state.identity = identity
                try handle.write(contentsOf: body)
                try handle.close()
            }
            // A link or another file put in the bytes' place after they were written is not delivered.
            guard let identity = state.identity, PartialFile.names(state.partialFile, identity) else {
                throw CocoaError(.fileWriteNoPermission, userInfo: [
                    NSLocalizedDescriptionKey: "the download's partial file \(state.partialFile.path) was replaced while the download wrote it",
                    NSFilePathErrorKey: state.partialFile.path,
                ])
            }
            if replacing {
                // rename(2) replaces the destination in one step: it is never missing in between.
                guard rename(state.partialFile.path, destination.path) == 0 else {
                    throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
                }
            } else {
                try ExclusiveMove.move(state.partialFile, to: destination)
            }
            return state.resumedBytes
        }
    }

    /// The request failed or was cancelled: keeps the bytes for a resume when they can be
    /// resumed, and deletes them when not. Writes nothing more after this, and the file is not
    /// delivered; does nothing after ``deliver(_:)``, and waits for one under way.
    func abandon() {
        state.withLock { state in
            guard !state.isClosed else { return }
            state.isClosed = true
            try? Self.close(&state)
            if state.offset > 0, let validator = state.validator, let url = state.url {
                let resume = ResumableDownload(url: url, requested: state.requested, destination: destination, partialFile: state.partialFile,
                                               offset: state.offset, validator: validator)
                if (try? resume.record()) != nil { return }
            }
            try? FileManager.default.removeItem(at: state.partialFile)
        }
    }

    /// The response's strong validator (RFC 9110, section 8.8): an `ETag` that is not weak; with
    /// no `ETag`, a `Last-Modified` at least a second before the response's `Date` (a file changed
    /// within the second it was sent in could keep its date).
    private static func strongValidator(of response: ResponseHead) -> String? {
        if let tag = response.headers["ETag"] {
            return tag.hasPrefix("W/") ? nil : tag
        }
        guard let modified = response.headers["Last-Modified"], let modifiedDate = CookieDate.parse(modified),
              let date = response.headers["Date"].flatMap(CookieDate.parse),
              date.timeIntervalSince(modifiedDate) >= 1 else { return nil }
        return modified
    }

    /// Whether a 206 says its range is of the same file as the bytes on disk, whose validator is
    /// `validator`: the same `ETag` (a 206 carries the one a 200 would), or for a date, no `ETag`
    /// and no other `Last-Modified`.
    private static func response(_ response: ResponseHead, keeps validator: String?) -> Bool {
        guard let validator else { return false }
        let tag = response.headers["ETag"]
        if validator.hasPrefix("\"") { return tag == validator }
        return tag == nil && (response.headers["Last-Modified"].map { $0 == validator } ?? true)
    }

    private static func isIdentityEncoded(_ response: ResponseHead) -> Bool {
        let encoding = response.headers["Content-Encoding"]?.trimmingCharacters(in: .whitespaces).lowercased()
        return encoding == nil || encoding == "identity" || encoding == ""
    }
}
