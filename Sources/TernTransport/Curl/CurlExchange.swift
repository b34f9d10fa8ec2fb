#if os(Linux)
import CTernCurl
import Foundation
import FoundationNetworking

/// One exchange over libcurl: its easy handle, configured from the request, and the callbacks
/// that turn what libcurl reads and writes into the receiver's events.
///
/// Set up on the sender's thread, then touched only by the loop's thread, which runs every
/// callback and ends it; only the report of its end may run elsewhere: hence
/// `@unchecked Sendable`, with no lock.
final class CurlExchange: @unchecked Sendable {
    /// libcurl's handle for the transfer, given back once the exchange has ended
    /// (``giveBackHandle()``): from then on only its address is read, as the key the loop finds
    /// exchanges by.
    let easy: UnsafeMutableRawPointer
    /// Whether ``easy`` has been given back, for the next exchange to take: a late word to resume
    /// must not pause or resume another's transfer.
    private var hasGivenBackItsHandle = false
    private let curl: UnsafePointer<TernCurl>
    /// Where the easy handle came from and goes back to.
    private let handles: CurlHandles
    private let receiver: any TransportReceiver
    private let url: URL
    private var headerList: UnsafeMutableRawPointer?
    /// Where libcurl writes what went wrong (CURL_ERROR_SIZE bytes).
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var body: Body?
    /// The response head as it arrives.
    private var head: ResponseHeadReader
    /// Why the exchange stopped its transfer, once it has.
    private var stop: Stop?

    /// Why an exchange stops its transfer (a callback returns what libcurl takes as "abort"),
    /// and so what its end reports, whatever libcurl's code for the abort.
    enum Stop {
        /// The receiver said stop; it knows why.
        case receiverSaidStop
        /// The response head was refused.
        case head(ResponseHeadReader.Refusal)
        /// The request body could not be read, or was not its stated length.
        case body(any Error)
        /// A chunked body declared more than the limit.
        case declaredTooLarge(BodyLimitExceeded)
        /// The connection libcurl chose had bytes waiting before the request was written.
        case strayInput
        /// The connection libcurl chose carries another exchange, and does not speak HTTP/2.
        case sharedConnection
        /// The body is not what its `Content-Encoding` says.
        case contentDecoding(ContentDecoder.Failure)
    }

    /// The body bytes last reported sent.
    private var reportedUpload: Int64 = 0
    /// The body bytes handed to libcurl.
    private var readBytes: Int64 = 0

    /// Where the request body comes from. A stream or a file is read by a ``BodyPump`` from when
    /// the request is about to be written: one waiting its turn for a connection holds no
    /// descriptor (opened as they were sent, 1,000 file uploads at once under 128 descriptors saw
    /// up to 560 fail for want of one).
    private enum Body {
        case data(Data, offset: Int)
        case source(BodyPump.Source)
        case pumped(BodyPump)
    }
    /// Whether libcurl holds sending paused, waiting for the body's next bytes, and receiving,
    /// for the receiver: resuming one leaves the other as it is.
    private var isSendingPaused = false
    private var isReceivingPaused = false

    /// The body's length, when known.
    private let bodyLength: Int64?
    /// A new source of a stream or file body, for reading it again from its start.
    private let remakeSource: (() throws -> BodyPump.Source)?
    /// The request's method, which decides whether its body may be sent again.
    private let method: String
    /// The plain-HTTP origin ("host:port") whose running exchanges the loop counts against its
    /// cap, or `nil` for HTTPS, left to libcurl's.
    let admissionOrigin: String?
    /// The loop that runs the exchange: its idle connections are checked for stray bytes before
    /// one carries this request, and a paused body resumes through it.
    private let loop: CurlLoop
    /// The most body bytes the receiver takes, if it has a limit.
    private let maximumBodySize: Int?
    /// Whether the exchange waits in the loop's line for its origin, the origin's connections
    /// all in use: read from the request's timeout, on another thread.
    private let queued = Locked(false)
    /// Whether the loop put it in that line, the loop thread's: only then is ``queued`` touched
    /// again, sparing each request a lock.
    private var wasQueued = false
    /// The body bytes received.
    private var receivedBytes = 0
    /// How many bytes libcurl will hand over again, having held them during a pause.
    private var heldOverBytes = 0
    /// Whether libcurl holds the head's last line, refused with a pause while the receiver
    /// judges the head: handed over again on resuming, it is skipped.
    private var heldOverHeadEnd = false
    /// The framing of a chunked body, read for the sizes its chunks declare, and the most they
    /// may declare; `nil` unless the body is chunked and limited.
    private var chunks: (framing: ChunkFraming, limit: UInt64)?
    /// The keys the server must show one of; none when empty.
    private let pinnedKeys: [String]
    /// The request's own `Accept-Encoding`, if it named one: codings Tern cannot undo come
    /// as they are only when asked for there.
    private var requestedEncodings: String?
    /// The final head's `Content-Encoding`, its repeats joined.
    private var contentEncoding: String?
    /// How the body is decoded: decided at its first byte (a body that cannot come, such as a
    /// HEAD's, is never judged by its encoding), from ``contentEncoding``.
    private var decoding = Decoding.undecided

    private enum Decoding {
        case undecided
        case none
        case by(ContentDecoder)
    }

    init(_ request: TransportRequest, receiver: any TransportReceiver, curl: UnsafePointer<TernCurl>, handles: CurlHandles,
         loop: CurlLoop, trusting certificates: URL?) throws {
        guard let url = request.urlRequest.url else { throw URLError(.badURL) }
        // The body first: making its stream can fail, and nothing is to be freed yet then.
        switch request.body {
        case .stream(let stream):
            body = .source(.stream(try stream.makeStream()))
            bodyLength = stream.length
            remakeSource = { .stream(try stream.makeStream()) }
        case .file(let file):
            body = .source(.file(file))
            // Its length now, from a regular file: it may have been swapped since it was checked.
            bodyLength = try RegularFile.size(of: file)
            remakeSource = { .file(file) }
        case .inRequest:
            remakeSource = nil
            if let data = request.urlRequest.httpBody {
                body = .data(data, offset: 0)
                bodyLength = Int64(data.count)
            } else {
                bodyLength = nil
            }
        }
        method = request.urlRequest.httpMethod ?? "GET"
        guard let easy = handles.take() else { throw URLError(.cannotLoadFromNetwork) }
        self.easy = easy
        self.handles = handles
        self.curl = curl
        self.receiver = receiver
        self.url = url
        let isHTTPS = url.scheme?.lowercased() == "https"
        tlsOrigin = isHTTPS ? "\(url.canonicalHost ?? ""):\(url.port ?? 443)" : nil
        head = ResponseHeadReader(mayBeHTTP2: isHTTPS)   // until TLS says which
        admissionOrigin = url.admissionOrigin
        self.loop = loop
        maximumBodySize = request.maximumBodySize
        pinnedKeys = request.pinnedKeys
        errorBuffer = .allocate(capacity: 256)
        errorBuffer.initialize(repeating: 0, count: 256)
        configure(request.urlRequest)
        if request.usesNewConnection { setLong(CurlOption.freshConnect, 1) }
        let trust = certificates.map { CurlTrust.only(certificates: $0) } ?? .system
        for (option, value) in trust.options {
            if let value { setString(option, value) } else { tern_curl_setopt_pointer(curl, easy, option, nil) }
        }
        if !pinnedKeys.isEmpty {
            setString(CurlOption.pinnedPublicKey, pinnedKeys.map { "sha256//" + $0 }.joined(separator: ";"))
        }
    }

    /// Whether the exchange waits its turn for a connection to its origin now.
    var isWaitingForConnection: Bool { queued.withLock { $0 } }

    /// The loop put the exchange in its origin's line.
    func waitsForConnection() {
        wasQueued = true
        queued.withLock { $0 = true }
    }

    /// The loop hands the exchange to libcurl: it waits in no line of Tern's any more.
    func leftTheLine() {
        guard wasQueued else { return }
        wasQueued = false
        queued.withLock { $0 = false }
    }

    /// Out of the multi handle by now: it held the exchange until then.
    deinit {
        if !hasGivenBackItsHandle { handles.giveBack(easy) }
        if let headerList { curl.pointee.slist_free_all(headerList) }
        errorBuffer.deallocate()
        closeBody()
    }

    private func configure(_ request: URLRequest) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        setLong(CurlOption.noSignal, 1)
        setLong(CurlOption.protocols, 3)            // CURLPROTO_HTTP | CURLPROTO_HTTPS: no file://, no ftp://
        setLong(CurlOption.tcpKeepAlive, 1)
        setLong(CurlOption.sslVerifyPeer, 1)        // libcurl's defaults, stated: the peer and its name are checked
        setLong(CurlOption.sslVerifyHost, 2)
        setString(CurlOption.url, url.absoluteString)
        // Requests sent together to an HTTPS origin wait to learn whether its first connection
        // speaks HTTP/2, and then share it, rather than each opening a connection of its own.
        if tlsOrigin != nil {
            setLong(CurlOption.pipeWait, 1)
        } else {
            // HTTP/1.1 and nothing else (as libcurl speaks plain HTTP anyway): a transfer that
            // wants only it never takes a connection another is using, even once an answer that
            // claimed HTTP/2 has made libcurl 7.88 take the server's connections for shared ones.
            setLong(CurlOption.httpVersion, CurlOption.http1_1)
        }
        // Tern undoes the body's encoding itself (ContentDecoder), so that a compressed stream
        // cut short is seen for what it is; libcurl hands the body as it came.
        setLong(CurlOption.httpContentDecoding, 0)
        // A proxy's answer to CONNECT is no head of the response: only the server's is.
        setLong(CurlOption.suppressConnectHeaders, 1)
        tern_curl_setopt_pointer(curl, easy, CurlOption.errorBuffer, errorBuffer)
        tern_curl_setopt_pointer(curl, easy, CurlOption.writeData, context)
        tern_curl_setopt_pointer(curl, easy, CurlOption.headerData, context)
        tern_curl_setopt_data_callback(curl, easy, CurlOption.writeFunction, curlWrite)
        tern_curl_setopt_data_callback(curl, easy, CurlOption.headerFunction, curlHeader)
        // Called only once verbose, which a chunked body turns on (see watchChunks()).
        tern_curl_setopt_pointer(curl, easy, CurlOption.debugData, context)
        tern_curl_setopt_debug_callback(curl, easy, CurlOption.debugFunction, curlDebug)
        tern_curl_setopt_pointer(curl, easy, CurlOption.progressData, context)
        tern_curl_setopt_progress_callback(curl, easy, CurlOption.progressFunction, curlProgress)
        if tern_curl_setopt_prereq_callback(curl, easy, CurlOption.prereqFunction, curlPrereq) == 0 {
            tern_curl_setopt_pointer(curl, easy, CurlOption.prereqData, context)
        } else {
            // A libcurl older than 7.80 cannot say which connection a request goes on before it
            // is written: reusing none, idle or carrying another, is the one way to never read a
            // stray answer or another's there.
            setLong(CurlOption.forbidReuse, 1)
            setLong(CurlOption.freshConnect, 1)
        }

        let method = request.httpMethod ?? "GET"
        var headers = request.allHTTPHeaderFields ?? [:]
        if let named = headers.first(where: { $0.key.caseInsensitiveEquals("Accept-Encoding") }) {
            requestedEncodings = named.value
        } else {
            headers["Accept-Encoding"] = headers.asksForARange ? "identity" : ContentDecoder.accepted
        }
        if body != nil {
            setLong(CurlOption.post, 1)
            tern_curl_setopt_pointer(curl, easy, CurlOption.readData, context)
            tern_curl_setopt_data_callback(curl, easy, CurlOption.readFunction, curlRead)
            tern_curl_setopt_pointer(curl, easy, CurlOption.seekData, context)
            tern_curl_setopt_seek_callback(curl, easy, CurlOption.seekFunction, curlSeek)
            setLong(CurlOption.noProgress, 0)
            // Without a length libcurl sends the body chunked over HTTP/1.1, and as it is over
            // HTTP/2, which has no chunks.
            if let bodyLength { tern_curl_setopt_offset(curl, easy, CurlOption.postFieldSize, bodyLength) }
            // libcurl's defaults for a POST, which URLSession does not add: a form content type,
            // and a wait for "100 Continue" before large bodies.
            if !headers.keys.contains(where: { $0.caseInsensitiveEquals("Content-Type") }) { headers["Content-Type"] = "" }
            headers["Expect"] = ""
        }
        if method == "HEAD" {
            setLong(CurlOption.noBody, 1)
        } else if method != (body == nil ? "GET" : "POST") {
            setString(CurlOption.customRequest, method)
        }
        for (name, value) in headers {
            // "Name;" sends a header with an empty value; "Name:" removes libcurl's own.
            appendHeaderLine(name, value.isEmpty ? (isOwnHeader(name) ? ":" : ";") : ": ", value)
        }
        if let headerList { tern_curl_setopt_pointer(curl, easy, CurlOption.httpHeader, headerList) }
    }

    /// Adds `name`, `separator` and `value` to ``headerList`` as one line, written on the stack:
    /// a line built as a `String` cost two allocations, and its C copy a third, for each field of
    /// every request (libcurl copies the line anyway).
    private func appendHeaderLine(_ name: String, _ separator: StaticString, _ value: String) {
        var name = name, value = value
        name.withUTF8 { name in
            value.withUTF8 { value in
                let length = name.count + separator.utf8CodeUnitCount + value.count
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length + 1) { line in
                    var end = line.initialize(fromContentsOf: name)
                    end = line[end...].initialize(fromContentsOf: UnsafeBufferPointer(start: separator.utf8Start, count: separator.utf8CodeUnitCount))
                    end = line[end...].initialize(fromContentsOf: value)
                    line[end] = 0
                    headerList = line.withMemoryRebound(to: CChar.self) { curl.pointee.slist_append(headerList, $0.baseAddress) }
                }
            }
        }
    }

    /// Whether libcurl adds this header itself unless told not to.
    private func isOwnHeader(_ name: String) -> Bool {
        name.caseInsensitiveEquals("Content-Type") || name.caseInsensitiveEquals("Expect") || name.caseInsensitiveEquals("Accept")
            || name.caseInsensitiveEquals("User-Agent")
    }

    private func setLong(_ option: Int32, _ value: Int) {
        tern_curl_setopt_long(curl, easy, option, value)
    }

    /// libcurl copies strings it is given.
    private func setString(_ option: Int32, _ value: String) {
        _ = value.withCString { tern_curl_setopt_pointer(curl, easy, option, $0) }
    }

    // MARK: Callbacks, on the loop's thread

    /// Whether the request may be written on the connection libcurl chose: not if bytes came on
    /// it while it was idle, which the request would read as its answer; nor if it carries
    /// another exchange when it does not speak HTTP/2, whose streams alone keep answers apart.
    ///
    /// libcurl 7.88 shares an HTTP/1 connection once one answer from its server said HTTP/2 (it
    /// then takes them all for HTTP/2 ones): the request was written while another's answer was
    /// coming, and read the rest of it. Plain HTTP asks for HTTP/1.1, which libcurl never
    /// shares, and refuses such an answer. Over HTTPS, HTTP/2 is what TLS negotiated (ALPN),
    /// which no status line changes: such an answer is refused there too, and from then on a
    /// connection to that origin carrying another exchange is refused, unless it speaks HTTP/2.
    fileprivate func connectionChosen(_ ends: CurlConnections.Ends) -> Bool {
        let connections = loop.connections
        guard !connections.hasStrayInput(ends) else {
            stop = .strayInput
            return false
        }
        guard let origin = tlsOrigin else {
            startBody()
            return true
        }
        if let carrying = carryingEnds { connections.release(carrying) }   // libcurl runs it again
        carryingEnds = nil
        let negotiated = tern_curl_negotiated_http2(curl, easy)
        if negotiated != 1, connections.hasClaimedHTTP2(origin), connections.isCarrying(ends) {
            stop = .sharedConnection
            return false
        }
        // Where TLS cannot be asked, whatever the status line says, as before.
        head.mayBeHTTP2 = negotiated != 0
        connections.carry(ends)
        carryingEnds = ends
        startBody()
        return true
    }

    /// "host:port" for an HTTPS request, whose connections may speak HTTP/2; `nil` for plain
    /// HTTP.
    private let tlsOrigin: String?

    /// The HTTPS connection the exchange is on, from when libcurl chose it until the exchange
    /// leaves libcurl; the loop thread's.
    private var carryingEnds: CurlConnections.Ends?

    /// The exchange has left libcurl: the connection no longer carries it.
    func leftLibcurl() {
        if let carrying = carryingEnds { loop.connections.release(carrying) }
        carryingEnds = nil
    }

    /// Whether the connection libcurl chose was refused before anything of the request was
    /// written, so that it can go again on a new one.
    var wasRefusedBeforeWriting: Bool {
        switch stop {
        case .strayInput?, .sharedConnection?: readBytes == 0 && !head.isComplete
        default: false
        }
    }

    /// Readies the exchange to run again, on a connection of its own.
    func useNewConnection() {
        stop = nil
        setLong(CurlOption.freshConnect, 1)
    }

    fileprivate func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) -> Written {
        if heldOverHeadEnd {
            heldOverHeadEnd = false
            return .taken
        }
        switch head.read(bytes) {
        case .more:
            return .taken
        case .refused(let refusal):
            if refusal == .claimsHTTP2, let tlsOrigin { loop.connections.noteClaimOfHTTP2(by: tlsOrigin) }
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
        let decision = receiver.didReceive(received)
        guard decision != .stop else {
            stop = .receiverSaidStop
            return .abort
        }
        watchChunks(of: received)
        contentEncoding = received.headers["Content-Encoding"]
        if declaresABodyThatCannotCome(received) { setLong(CurlOption.forbidReuse, 1) }
        // The body waits, the head's last line held, until the receiver resumes it.
        heldOverHeadEnd = decision == .pause
        isReceivingPaused = decision == .pause
        return decision == .pause ? .pause : .taken
    }

    /// Whether `response` can have no body (it answers a HEAD, or is a 204 or a 304) but declares
    /// one, over HTTP/1: a compliant server sends none of it, while a hostile one can send it
    /// after the next request went out on the connection, where no check could tell it from that
    /// request's answer. Such a connection is closed, not reused.
    private func declaresABodyThatCannotCome(_ response: ResponseHead) -> Bool {
        guard method == "HEAD" || response.statusCode == 204 || response.statusCode == 304,
              response.httpVersion?.hasPrefix("HTTP/1") == true else { return false }
        let length = response.headers["Content-Length"].map { $0.trimmingCharacters(in: .whitespaces) }
        return response.headers["Transfer-Encoding"] != nil || (length != nil && length != "0")
    }

    /// Reads a chunked body's framing as it arrives when the body has a limit, to stop at once a
    /// body whose chunks declare more than it: libcurl would wait for every declared byte.
    ///
    /// libcurl hands raw body bytes, before it decodes the chunks, to its debug callback, and only
    /// when verbose: so verbose is turned on for this one body (libcurl's other messages go to the
    /// callback too, and are dropped). The progress callback, which libcurl calls after each read,
    /// then stops the transfer.
    private func watchChunks(of response: ResponseHead) {
        guard let maximumBodySize, response.httpVersion?.hasPrefix("HTTP/1") == true,
              response.headers["Transfer-Encoding"]?.lowercased().contains("chunked") == true else { return }
        var limit = UInt64(maximumBodySize)
        // The chunks carry the body encoded, and the limit counts it decoded: an encoded body
        // may be larger than its decoding by a few bytes per block (stored deflate blocks, zstd
        // and brotli headers), never by a thousandth.
        if response.headers["Content-Encoding"] != nil { limit += limit / 1024 + 1024 }
        chunks = (ChunkFraming(), limit)
        setLong(CurlOption.noProgress, 0)
        setLong(CurlOption.verbose, 1)
    }

    /// Raw body bytes, chunk framing included, when the body's chunks are watched.
    fileprivate func receiveRaw(_ bytes: UnsafeRawBufferPointer) {
        guard var watched = chunks else { return }
        watched.framing.read(bytes)
        let declared = watched.framing.declaredBytes
        guard declared > watched.limit else {
            chunks = watched
            return
        }
        chunks = nil
        setLong(CurlOption.verbose, 0)
        stop = .declaredTooLarge(BodyLimitExceeded(limit: maximumBodySize ?? 0, receivedBytes: receivedBytes,
                                                   declaredLength: Int(clamping: declared), statusCode: head.status))
    }

    /// What the write callback tells libcurl.
    fileprivate enum Written {
        case taken
        case abort
        case pause
    }

    fileprivate func receiveBody(_ buffer: UnsafeRawBufferPointer) -> Written {
        guard stop == nil else { return .abort }
        // libcurl hands what it held during a pause over again: the receiver has had it.
        let skipped = min(heldOverBytes, buffer.count)
        heldOverBytes -= skipped
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[skipped...])
        if case .undecided = decoding, !bytes.isEmpty {
            do {
                decoding = try ContentDecoder.forBody(contentEncoding: contentEncoding, requested: requestedEncodings).map(Decoding.by) ?? .none
            } catch {
                stop = .contentDecoding(error)
                return .abort
            }
        }
        if case .by(let decoder) = decoding {
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
        receivedBytes += chunk.count
        switch receiver.didReceive(chunk) {
        case .proceed:
            return .taken
        case .stop:
            stop = .receiverSaidStop
            return .abort
        case .pause:
            // Paused, libcurl keeps this whole buffer and hands it over again on resuming.
            heldOverBytes = count
            isReceivingPaused = true
            return .pause
        }
    }

    /// Goes on receiving after a pause; on the loop's thread. Nothing once the exchange has ended.
    func resumeReceiving() {
        guard !hasGivenBackItsHandle else { return }
        isReceivingPaused = false
        // Resuming may send at once (an HTTP/2 window update), through OpenSSL.
        _ = CurlLibrary.exitWaits { curl.pointee.easy_pause(easy, isSendingPaused ? CurlPause.send : CurlPause.none) }
    }

    /// Goes on sending once the body has bytes again; on the loop's thread, while libcurl runs
    /// the transfer (see ``CurlLoop/resumeSending(_:)``).
    func resumeSending() {
        guard isSendingPaused, !hasGivenBackItsHandle else { return }
        isSendingPaused = false
        _ = CurlLibrary.exitWaits { curl.pointee.easy_pause(easy, isReceivingPaused ? CurlPause.receive : CurlPause.none) }
    }

    /// The request is about to be written: a stream or a file body starts being read ahead.
    /// Not before: libcurl holds a transfer it has taken until a connection is free (HTTPS,
    /// whose connections Tern leaves to libcurl to count), and 300 uploads of a 2 MB file at
    /// once, their files opened as libcurl took them, failed 179 times for want of a descriptor
    /// under a limit of 128.
    private func startBody() {
        guard case .source(let source)? = body else { return }
        let pump = BodyPump(source, length: bodyLength) { [weak self, loop] in
            if let self { loop.resumeSending(self) }
        }
        body = .pumped(pump)
        pump.start()
    }

    /// libcurl's progress, after each read and write: reports what was sent, and returns whether
    /// the transfer goes on.
    fileprivate func progress(uploaded: Int64) -> Bool {
        reportUpload(uploaded)
        if case .declaredTooLarge? = stop { return false }
        return true
    }

    /// What the read callback tells libcurl.
    fileprivate enum BodyRead {
        /// This many bytes were put in its buffer; 0 at the body's end.
        case bytes(Int)
        /// None yet: sending waits until the body has some.
        case pause
        case abort
    }

    /// Fills `buffer` with the next bytes of the body.
    fileprivate func readBody(into buffer: UnsafeMutableRawBufferPointer) -> BodyRead {
        switch body {
        case .data(let data, let offset):
            let count = min(buffer.count, data.count - offset)
            let start = data.startIndex + offset
            data.copyBytes(to: buffer.bindMemory(to: UInt8.self), from: start..<(start + count))
            body = .data(data, offset: offset + count)
            readBytes += Int64(count)
            return .bytes(count)
        case .source:
            // A libcurl older than 7.80 says nothing before it asks for the body.
            startBody()
            return readBody(into: buffer)
        case .pumped(let pump):
            switch pump.take(into: buffer) {
            case .bytes(let count):
                readBytes += Int64(count)
                return .bytes(count)
            case .waiting:
                isSendingPaused = true
                return .pause
            case .end:
                return .bytes(0)
            case .failed(let error):
                stop = .body(error)
                return .abort
            }
        case nil:
            return .bytes(0)
        }
    }

    /// What the seek callback tells libcurl.
    fileprivate enum Rewound: Int32 {
        case done = 0
        case failed = 1
        case cannot = 2
    }

    /// Takes the body back to its start, when libcurl sends the request again on a new
    /// connection: the one it reused closed, or an HTTP/2 server refused the stream, before any
    /// byte of an answer. Only for an idempotent method: a POST, which the server
    /// may have acted on, fails as connection lost (``CurlCode/rewindFailed``), and whether it
    /// is sent again is the retry policy's to decide.
    fileprivate func rewindBody(to offset: Int64, from origin: Int32) -> Rewound {
        guard offset == 0, origin == SEEK_SET, HTTPMethod(rawValue: method).isIdempotent else { return .cannot }
        switch body {
        case .data(let data, _):
            body = .data(data, offset: 0)
        case .pumped(let pump):
            pump.close()
            guard let remakeSource else { return .cannot }
            do {
                body = .source(try remakeSource())
            } catch {
                body = nil
                stop = .body(error)
                return .failed
            }
        case .source, nil:
            break
        }
        // The new attempt starts unpaused, its body read anew.
        readBytes = 0
        isSendingPaused = false
        return .done
    }

    /// Stops reading the body and closes its stream or file, if it was opened.
    private func closeBody() {
        if case .pumped(let pump) = body { pump.close() }
        body = nil
    }

    /// The body bytes libcurl has sent.
    private func sentBytes() -> Int64 {
        var sent: Int64 = 0
        tern_curl_getinfo_offset(curl, easy, CurlInfo.uploadedBytes, &sent)
        return sent
    }

    /// Reports `sent` body bytes, as libcurl counts them, but never more than were read from the
    /// body: libcurl's count of a chunked body includes the chunks' framing.
    fileprivate func reportUpload(_ sent: Int64) {
        let sent = min(sent, readBytes)
        guard body != nil, !head.isComplete, sent > reportedUpload else { return }
        reportedUpload = sent
        receiver.didSendBodyData(sent, of: bodyLength)
    }

    // MARK: The end

    /// How an exchange ended, for its receiver.
    struct Ending {
        /// `nil` when the exchange ended completely.
        let error: (any Error)?
        /// What libcurl measured, unless the exchange was cancelled before it ran.
        let metrics: TransferMetrics?
    }

    /// Ends the exchange, reports it at once, and gives its handle back: `code` is libcurl's
    /// result, `nil` for a cancel.
    func complete(_ code: Int32?) {
        report(end(code))
        giveBackHandle()
    }

    /// Works out how the exchange ended from libcurl's `code` (`nil` for a cancel); on the loop's
    /// thread, once libcurl has let go of the handle (removed from the multi handle, or never
    /// added), so no read or progress callback can meet the body closed here.
    func end(_ code: Int32?) -> Ending {
        // The body's descriptor goes with the transfer, not with whatever still holds the task.
        closeBody()
        var error: (any Error)? = switch code {
        case nil: URLError(.cancelled, userInfo: [NSURLErrorFailingURLErrorKey: url])
        case CurlCode.ok?: nil
        case let code?:
            stop.flatMap { $0.error(endingWith: code, url: url) }
                ?? (code == CurlCode.pinnedKeyMismatch && !pinnedKeys.isEmpty ? PinnedKeyMismatch(pins: pinnedKeys) : nil)
                ?? refusedHead(code)
                ?? CurlCode.urlError(code, message: message(for: code), url: url)
        }
        if error == nil, !head.isComplete { error = endedBeforeItsHead() }
        if error == nil, case .by(let decoder) = decoding {
            do { try decoder.finish() } catch let failure { error = Stop.contentDecoding(failure).error(endingWith: CurlCode.writeError, url: url) }
        }
        return Ending(error: error, metrics: code == nil ? nil : metrics())
    }

    /// Gives the easy handle back for the next exchange, once this one has ended; on the loop's
    /// thread, which used it last, rather than wherever the exchange is let go of last (its
    /// task may be held long after): with 64 in flight that took Tern's throughput up 1.06x-1.21x
    /// (six runs of `ClientsAB 64 10000 7-9 bytes`, in turns within each).
    func giveBackHandle() {
        guard !hasGivenBackItsHandle else { return }
        hasGivenBackItsHandle = true
        handles.giveBack(easy)
    }

    /// Tells the receiver how the exchange ended, on the loop's thread: the receiver moves what
    /// it does then elsewhere if that would hold the loop up (see ``TransportCaller``).
    func report(_ ending: Ending) {
        if let metrics = ending.metrics { receiver.didCollect(metrics) }
        receiver.didComplete(with: ending.error)
    }

    /// Why a transfer libcurl ended well is no answer when its head never ended: libcurl takes a
    /// reply without a status line for HTTP/0.9, and a head cut off by the connection's close for
    /// a whole one, though what it left out (a `Cache-Control: no-store`, a `Set-Cookie`, the
    /// body's length) is unknown. Browsers refuse such a head over HTTPS.
    private func endedBeforeItsHead() -> URLError {
        guard head.status > 0 else { return URLError(.badServerResponse, userInfo: [NSURLErrorFailingURLErrorKey: url]) }
        return URLError(.networkConnectionLost, userInfo: [NSLocalizedDescriptionKey: "the connection closed before the response's head ended",
                                                           NSURLErrorFailingURLErrorKey: url])
    }

    /// What libcurl measured of the transfer.
    private func metrics() -> TransferMetrics {
        func seconds(_ info: Int32) -> TimeInterval? {
            var microseconds: Int64 = 0
            guard tern_curl_getinfo_offset(curl, easy, info, &microseconds) == 0 else { return nil }
            return TimeInterval(microseconds) / 1e6
        }
        func count(_ info: Int32) -> Int64 {
            var value: Int64 = 0
            tern_curl_getinfo_offset(curl, easy, info, &value)
            return value
        }
        var connections = 0
        let knowsConnections = tern_curl_getinfo_long(curl, easy, CurlInfo.newConnections, &connections) == 0
        var version = 0
        tern_curl_getinfo_long(curl, easy, CurlInfo.httpVersion, &version)
        let tls = url.scheme?.lowercased() == "https" ? seconds(CurlInfo.tlsHandshakeTime) : nil
        return TransferMetrics(
            url: url, statusCode: head.isComplete ? head.status : nil,
            nameLookup: seconds(CurlInfo.nameLookupTime), connect: seconds(CurlInfo.connectTime), tlsHandshake: tls,
            firstByte: seconds(CurlInfo.firstByteTime), total: seconds(CurlInfo.totalTime),
            bytesSent: readBytes, bytesReceived: count(CurlInfo.downloadedBytes),
            reusedConnection: knowsConnections ? connections == 0 : nil,
            httpVersion: Self.httpVersionName(version)
        )
    }

    /// libcurl's `CURL_HTTP_VERSION_*` as a protocol's name.
    private static func httpVersionName(_ version: Int) -> String? {
        switch version {
        case 1: "HTTP/1.0"
        case 2: "HTTP/1.1"
        case 3: "HTTP/2"
        case 30: "HTTP/3"
        default: nil
        }
    }

    /// libcurl's own refusals of a head, as a response that cannot be trusted: a status code of
    /// more than three digits (CURLE_UNSUPPORTED_PROTOCOL), a line of the head, its status line
    /// or a field, past the 100 KB libcurl reads (CURLE_OUT_OF_MEMORY, as libcurl 7.88 says
    /// it, with no word of the line), or a first field line that continues the status line
    /// (CURLE_BAD_FUNCTION_ARGUMENT, as if Tern had called libcurl wrongly): said here, where
    /// libcurl's words would mislead.
    private func refusedHead(_ code: Int32) -> (any Error)? {
        guard !head.isComplete, code == 27 || (code == 43 && head.status != 0) || (code == 1 && head.status == 0) else { return nil }
        let why = switch code {
        case 27: "a line of its head passed the 100 KB libcurl reads"
        case 43: "its first field line begins with a space, continuing the status line (obsolete line folding)"
        default: message(for: code)
        }
        return ResponseHeadCheck.refusal(why, url: url)
    }

    private func message(for code: Int32) -> String {
        let said = errorBuffer.pointee != 0 ? String(cString: errorBuffer)
            : curl.pointee.easy_strerror(code).map { String(cString: $0) } ?? "libcurl error \(code)"
        if code == CurlCode.rewindFailed {
            return "the connection closed, or the server refused the request, before any answer came; a \(method) is not sent again unasked"
        }
        // libcurl 7.88 reports a socket it could not make as a connection refused, with no
        // system error: whether a descriptor can be made now tells that case apart.
        guard code == 7 else { return said }   // CURLE_COULDNT_CONNECT
        let probe = dup(STDERR_FILENO)
        let error = errno
        if probe >= 0 { close(probe) }
        guard probe < 0, error == EMFILE || error == ENFILE else { return said }
        return "\(said): no socket could be made, the process or the system has no file descriptor left (\(String(cString: strerror(error))))"
    }
}

// libcurl's callbacks: C functions, handed the exchange as their context.

private let curlWrite: tern_curl_data_callback = { buffer, size, count, context in
    guard let context, let buffer else { return 0 }
    let exchange = Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue()
    switch exchange.receiveBody(UnsafeRawBufferPointer(start: buffer, count: size * count)) {
    case .taken: return size * count
    case .abort: return 0
    case .pause: return 0x1000_0001   // CURL_WRITEFUNC_PAUSE
    }
}

private let curlHeader: tern_curl_data_callback = { buffer, size, count, context in
    guard let context, let buffer else { return 0 }
    let exchange = Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue()
    switch exchange.receiveHeaderLine(UnsafeRawBufferPointer(start: buffer, count: size * count)) {
    case .taken: return size * count
    case .abort: return 0
    case .pause: return 0x1000_0001   // CURL_WRITEFUNC_PAUSE
    }
}

private let curlRead: tern_curl_data_callback = { buffer, size, count, context in
    guard let context, let buffer else { return 0x1000_0000 }   // CURL_READFUNC_ABORT
    let exchange = Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue()
    switch exchange.readBody(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count)) {
    case .bytes(let count): return count
    case .pause: return 0x1000_0001   // CURL_READFUNC_PAUSE
    case .abort: return 0x1000_0000   // CURL_READFUNC_ABORT
    }
}

private let curlSeek: tern_curl_seek_callback = { context, offset, origin in
    guard let context else { return 2 }   // CURL_SEEKFUNC_CANTSEEK
    return Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue().rewindBody(to: offset, from: origin).rawValue
}

private let curlPrereq: tern_curl_prereq_callback = { context, peerAddress, _, peerPort, localPort in
    guard let context, let peerAddress else { return 1 }   // CURL_PREREQFUNC_ABORT
    let ends = CurlConnections.Ends(localPort: localPort, peerAddress: String(cString: peerAddress), peerPort: peerPort)
    return Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue().connectionChosen(ends) ? 0 : 1
}

private let curlProgress: tern_curl_progress_callback = { context, _, _, _, uploaded in
    guard let context else { return 0 }
    return Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue().progress(uploaded: uploaded) ? 0 : 1
}

private let curlDebug: tern_curl_debug_callback = { _, kind, buffer, count, context in
    guard kind == 3, let context, let buffer else { return 0 }   // CURLINFO_DATA_IN: raw body bytes
    Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue().receiveRaw(UnsafeRawBufferPointer(start: buffer, count: count))
    return 0
}
extension CurlExchange.Stop {
    /// What an exchange that stopped for this reason reports, when libcurl ended it with `code`
    /// (the abort the stop caused); `nil` when the code says something else went wrong.
    func error(endingWith code: Int32, url: URL) -> (any Error)? {
        let aborted = code == CurlCode.abortedByCallback || code == CurlCode.writeError || code == CurlCode.readError
            || code == CurlCode.rewindFailed
        guard aborted else { return nil }
        switch self {
        case .receiverSaidStop:
            return nil
        case .body(let error):
            return error
        case .declaredTooLarge(let error):
            return error
        case .strayInput:
            return URLError(.badServerResponse, userInfo: [
                NSLocalizedDescriptionKey: "the server sent bytes on a new connection before the request",
                NSURLErrorFailingURLErrorKey: url,
            ])
        case .sharedConnection:
            return URLError(.badServerResponse, userInfo: [
                NSLocalizedDescriptionKey: "libcurl chose a connection that carries another request, and not over HTTP/2",
                NSURLErrorFailingURLErrorKey: url,
            ])
        case .head(.untrustworthy(let problem)):
            return ResponseHeadCheck.refusal(problem, url: url)
        case .head(.claimsHTTP2):
            return ResponseHeadCheck.refusal("its status line says HTTP/2 or later on a connection that speaks HTTP/1", url: url)
        case .contentDecoding(let failure):
            return URLError(.cannotDecodeContentData, userInfo: [
                NSLocalizedDescriptionKey: failure.reason,
                NSURLErrorFailingURLErrorKey: url,
            ])
        case .head(.tooLarge):
            return URLError(.badServerResponse, userInfo: [
                NSLocalizedDescriptionKey: "the response's head passed \(ResponseHeadReader.limit / 1024) KiB",
                NSURLErrorFailingURLErrorKey: url,
            ])
        }
    }
}
#endif
