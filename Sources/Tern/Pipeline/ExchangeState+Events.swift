import Foundation

/// The transport's events as an exchange takes them, under the request's lock: each changes the
/// state and says what the ``ResponseCollector`` does next, once the lock is let go. A transport
/// that breaks the order (a second head, a chunk before the head, anything after the end) fails
/// the exchange or is ignored here, never trusted.
extension ExchangeState {
    /// What a chunk came to.
    enum Taken {
        /// The stream's: it goes there, outside the lock.
        case stream(StreamBuffer)
        /// Kept (in memory or in the download's file): the progress to report, if it is the
        /// request's (see ``ExchangeState/reportsProgress``).
        case kept(TransferProgress?)
        /// Refused: the transfer stops.
        case stop
    }

    /// A head came: whether it is the exchange's first, which is then judged (and, if
    /// `judgedElsewhere`, what comes meanwhile held). A second head is the transport's error,
    /// and fails the exchange; one after the end belongs to nothing.
    mutating func headCame(judgedElsewhere: Bool) -> Bool {
        guard !hasHead, !hasEndCome else {
            if !hasEndCome, stopped == nil { stopped = URLError(.badServerResponse) }
            return false
        }
        hasHead = true
        if judgedElsewhere { judging = Judging() }
        return true
    }

    /// What was measured so far, handed to a stream's head; what the end measures replaces it.
    mutating func takeMetrics() -> TransferMetrics? {
        defer { metrics = nil }
        return metrics
    }

    /// `head` opened `stream`, where the body goes from now on.
    mutating func open(_ stream: StreamBuffer, with head: ResponseHead) {
        self.head = head
        self.stream = stream
    }

    /// Takes `head` as the head of the body collected here, bound for `target`: `.kept` with the
    /// body's progress so far, or `.stop` when the exchange stops at its head (a restart, or a
    /// declared length over `limit`, or over `fileLimit` for the file). Never `.stream`. The
    /// length a response that has no body states (to a `HEAD`, or a `1xx`, `204` or `304`: RFC
    /// 9110, §6.4.1) is that of a body it does not carry: it is no body coming, to be limited.
    mutating func accept(_ head: ResponseHead, into target: DownloadFile.Target, limit: Int?, fileLimit: Int?, bodyless: Bool = false) -> Taken {
        self.head = head
        switch target {
        case .restart:
            stopped = DownloadRestart()
            return .stop
        case .file(let offset, let total):
            isToFile = true
            reportsProgress = true
            self.offset = offset
            expectedLength = total
            if let fileLimit, let total, total > fileLimit {
                stopped = BodyLimitExceeded(limit: fileLimit, receivedBytes: 0, declaredLength: Int(total), statusCode: head.statusCode)
                return .stop
            }
        case .memory:
            // Only an unencoded length says how large the body will be: the limit counts decompressed bytes.
            let declared = head.headers["Content-Encoding"] == nil && !bodyless ? head.contentLength ?? -1 : -1
            expectedLength = declared >= 0 ? declared : nil
            if let limit, declared > limit {
                stopped = BodyLimitExceeded(limit: limit, receivedBytes: 0, declaredLength: Int(declared), statusCode: head.statusCode)
                return .stop
            }
            reportsProgress = (200..<300).contains(head.statusCode)
        }
        return .kept(progress)
    }

    /// Holds what comes from now on, as for a head judged elsewhere: while the download's file
    /// waits for a descriptor.
    mutating func holdWhileTheFileWaits() {
        judging = Judging(waitsForFile: true)
    }

    /// Whether the exchange failed while its head was judged, or its file waited.
    var hasFailedWhileJudged: Bool {
        if case .some(.some) = judging?.end { true } else { false }
    }

    /// Holds `chunk` while the head is judged elsewhere or the download's `file` waits for a
    /// descriptor: `nil` when neither, `.stop` once the end came meanwhile (what follows it
    /// belongs to nothing), or once more is held than the wait allows: ``mostHeldWhileAFileWaits``
    /// for the file (the download then fails), the `stream`'s ceiling for its head (the stream
    /// then ends as one its reader fell behind).
    mutating func hold(_ chunk: Data, file: DownloadFile?, stream: StreamBuffer?) -> TransferDecision? {
        guard judging != nil else { return nil }
        guard judging?.end == nil else { return .stop }
        // Appended in place: appended to a copy of what is held, each chunk copied every chunk
        // before it, and a server's one-byte chunks took time by the square of their number.
        judging?.chunks.append(chunk, joiningFrom: 0)
        judging?.heldBytes += chunk.count
        guard let held = judging else { return nil }
        if held.waitsForFile, let file, held.heldBytes > Self.mostHeldWhileAFileWaits {
            stopped = stopped ?? Self.writeFailure(POSIXError(.EMFILE), writing: file)
            return .stop
        }
        if !held.waitsForFile, let stream, held.heldBytes > stream.ceiling {
            stopped = stopped ?? stream.overrun()
            return .stop
        }
        return .proceed
    }

    /// What came while the head was judged, oldest first: the chunks held so far (more may come
    /// while they are taken), then, once none are left, the end if it came. Holding stops when
    /// nothing is left.
    mutating func takeHeld() -> (chunks: [Data], end: (any Error)??) {
        let held = judging ?? Judging()
        if held.chunks.isEmpty { judging = nil } else { judging?.chunks = [] }
        return (held.chunks, held.chunks.isEmpty ? held.end : nil)
    }

    /// Takes `chunk` into the stream, the download's `file` or the body in memory, within `limit`.
    mutating func take(_ chunk: Data, limit: Int?, file: DownloadFile?) -> Taken {
        if let stream { return .stream(stream) }
        // A chunk before the head is the transport's error (the body would be cut short
        // unseen); one after the end belongs to nothing.
        guard hasHead, !hasEnded else {
            if !hasEnded, stopped == nil { stopped = URLError(.badServerResponse) }
            return .stop
        }
        guard stopped == nil else { return .stop }
        if isToFile, let file {
            if let fileLimit = file.maximumSize, offset + received + Int64(chunk.count) > fileLimit {
                stopped = BodyLimitExceeded(limit: fileLimit, receivedBytes: Int(offset + received) + chunk.count, statusCode: head?.statusCode)
                return .stop
            }
            do {
                try file.write(chunk)
            } catch let restart as DownloadRestart {
                stopped = restart
                return .stop
            } catch {
                stopped = error is CancellationError ? URLError(.cancelled) : Self.writeFailure(error, writing: file)
                return .stop
            }
        } else if let limit, body.count + chunk.count > limit {
            stopped = BodyLimitExceeded(limit: limit, receivedBytes: body.count + chunk.count, statusCode: head?.statusCode)
            body = Data()
            return .stop
        } else if body.isEmpty, chunk.startIndex == 0 {
            body = chunk   // often the whole body: kept as it came, not copied
        } else {
            body.append(chunk)
        }
        received += Int64(chunk.count)
        return .kept(progress)
    }

    /// The body's progress so far, when it is the request's.
    private var progress: TransferProgress? {
        reportsProgress ? TransferProgress(direction: .download, completedBytes: offset + received, totalBytes: expectedLength) : nil
    }

    /// The exchange's end: what was collected, handed over. `nil` when it belongs to nothing
    /// (after the end), or waits, the first end kept, for a head judged elsewhere.
    mutating func endCame(_ error: (any Error)?) -> ExchangeState? {
        guard !hasEnded else { return nil }
        guard judging == nil else {
            if judging?.end == nil { judging?.end = .some(error) }
            return nil
        }
        return end()
    }

    /// The transport's task, made: kept while a head is judged elsewhere, unless the exchange
    /// ended (kept, the task, which holds the collector, would keep the request for ever).
    /// Returns what the task is owed, the head having been judged first.
    mutating func attach(_ task: any TransportTask) -> TransferDecision? {
        if !hasEnded { self.task = task }
        defer { owed = nil }
        return owed
    }

    /// The task to tell `decision`; before it is attached, `decision` is kept for it.
    mutating func owe(_ decision: TransferDecision) -> (any TransportTask)? {
        if task == nil { owed = decision }
        return task
    }

    /// Why the transfer stops when the download's file cannot be written.
    static func writeFailure(_ error: any Error, writing file: DownloadFile) -> APIError {
        .fileFailed(.init(reason: .writeFailed, destination: file.destination, underlying: error))
    }
}
