#if os(Linux)
import CTernCurl
import Foundation

/// Reading the response: its head, its body (decoded, counted, watched), and pausing it for the
/// receiver. On the loop's thread, from libcurl's callbacks.
extension CurlExchange {
    /// What the write and header callbacks tell libcurl.
    enum Written {
        case taken
        case abort
        case pause
    }

    func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) -> Written {
        noteAnswerBegan()
        if response.heldOverHeadEnd {
            response.heldOverHeadEnd = false
            return .taken
        }
        switch response.head.read(bytes) {
        case .more:
            return .taken
        case .refused(let refusal):
            if refusal == .claimsHTTP2, let tlsOrigin = owned.value.connection.tlsOrigin { loop.connections.noteClaimOfHTTP2(by: tlsOrigin) }
            stop = .head(refusal)
            return .abort
        case .head(let complete):
            return deliver(complete)
        }
    }

    private func deliver(_ complete: ResponseHeadReader.Head) -> Written {
        // What was sent is reported before the head, as the receiver expects.
        reportUpload(sentBytes())
        guard let received = ResponseHead(url: url, statusCode: complete.status, httpVersion: complete.httpVersion,
                                          headers: complete.fields, setCookies: complete.setCookies) else { return .abort }
        // A stream's end may be hours away: what is known of its exchange goes with its head.
        if isStream { receiver.didCollect(metrics(ended: false)) }
        let decision = receiver.didReceive(received)
        guard decision != .stop else {
            stop = .receiverSaidStop
            return .abort
        }
        watchChunks(of: received)
        response.contentEncoding = received.headers["Content-Encoding"]
        if ConnectionGuard.declaresABodyThatCannotCome(received, method: method) { options.setLong(CurlOption.forbidReuse, 1) }
        // The body waits, the head's last line held, until the receiver resumes it.
        response.heldOverHeadEnd = decision == .pause
        response.isReceivingPaused = decision == .pause
        return decision == .pause ? .pause : .taken
    }

    /// Watches a chunked body's framing (``ChunkWatch``) when the body has a limit.
    ///
    /// libcurl hands raw body bytes, before it decodes the chunks, to its debug callback, and only
    /// when verbose: so verbose is turned on for this one body (libcurl's other messages go to the
    /// callback too, and are dropped). The progress callback, which libcurl calls after each read,
    /// then stops the transfer.
    private func watchChunks(of received: ResponseHead) {
        guard let watch = ChunkWatch(received, maximumBodySize: maximumBodySize) else { return }
        response.chunks = watch
        options.setLong(CurlOption.noProgress, 0)
        options.setLong(CurlOption.verbose, 1)
    }

    /// Raw body bytes, chunk framing included, when the body's chunks are watched.
    func receiveRaw(_ bytes: UnsafeRawBufferPointer) {
        guard let declared = response.chunks?.read(bytes) else { return }
        response.chunks = nil
        options.setLong(CurlOption.verbose, 0)
        stop = .declaredTooLarge(BodyLimitExceeded(limit: maximumBodySize ?? 0, receivedBytes: response.receivedBytes,
                                                   declaredLength: Int(clamping: declared), statusCode: response.head.status))
    }

    func receiveBody(_ buffer: UnsafeRawBufferPointer) -> Written {
        guard stop == nil else { return .abort }
        let bytes = response.unseen(buffer)
        let decoder: ContentDecoder?
        do {
            decoder = try response.decoder(forBodyBytes: bytes)
        } catch {
            stop = .contentDecoding(error)
            return .abort
        }
        if let decoder {
            decoder.push(bytes)
            return handOverDecoded(by: decoder, holding: buffer.count)
        }
        guard let start = bytes.baseAddress, !bytes.isEmpty else { return .taken }
        // Copied as bytes: `Data`'s initializer from a sequence looks up a tuple type's metadata
        // in the runtime's cache on each call, where threads wait on one another.
        return handOver(Data(bytes: start, count: bytes.count), holding: buffer.count)
    }

    /// Hands the receiver what `decoder` can make of the body so far, piece by piece, until
    /// it pauses or stops: what a pause leaves is made on resuming, when libcurl hands over
    /// again the `count` bytes it holds, all of them the decoder's already.
    private func handOverDecoded(by decoder: ContentDecoder, holding count: Int) -> Written {
        do {
            while let piece = try decoder.next() {
                let written = handOver(piece, holding: count)
                guard written == .taken else { return written }
            }
            return .taken
        } catch {
            stop = .contentDecoding(error)
            return .abort
        }
    }

    /// Hands `chunk` of the body to the receiver; on a pause libcurl keeps the `count` bytes of
    /// its buffer and hands them over again.
    private func handOver(_ chunk: Data, holding count: Int) -> Written {
        response.receivedBytes += chunk.count
        switch receiver.didReceive(chunk) {
        case .proceed:
            return .taken
        case .stop:
            stop = .receiverSaidStop
            return .abort
        case .pause:
            // Paused, libcurl keeps this whole buffer and hands it over again on resuming.
            response.heldOverBytes = count
            response.isReceivingPaused = true
            return .pause
        }
    }

    /// Goes on receiving after a pause; on the loop's thread. Nothing once the exchange has ended.
    func resumeReceiving() {
        guard !hasGivenBackItsHandle else { return }
        response.isReceivingPaused = false
        let sendingPaused = upload.isSendingPaused
        // Resuming may send at once (an HTTP/2 window update), through OpenSSL.
        _ = CurlLibrary.exitWaits { curl.pointee.easy_pause(easy, sendingPaused ? CurlPause.send : CurlPause.none) }
    }

    /// libcurl's progress, after each read and write: reports what was sent, and returns whether
    /// the transfer goes on.
    func progress(uploaded: Int64) -> Bool {
        reportUpload(uploaded)
        if case .declaredTooLarge? = stop { return false }
        return true
    }

    /// The exchange's handle's options, to change as the response comes.
    var options: CurlEasyOptions { CurlEasyOptions(curl: curl, easy: easy) }
}
#endif
