#if os(Linux)
import CTernCurl
import Foundation
import FoundationNetworking

/// One exchange over libcurl: its easy handle, configured from the request, and the callbacks
/// that turn what libcurl reads and writes into the receiver's events.
///
/// In parts, one a file: configuring the handle (``CurlEasyOptions``, ``CurlRequestHead``),
/// guarding the connection libcurl chose (``ConnectionGuard``), the upload (``CurlUpload``),
/// reading the response (``ResponseReading``, `CurlExchange+Response.swift`), libcurl's
/// callbacks (`CurlCallbacks.swift`), and mapping its failures to errors (``CurlFailure``).
///
/// Set up on the sender's thread, then touched only by the loop's thread, which runs every
/// callback and ends it; only the report of its end may run elsewhere. What changes is in
/// ``owned``, which checks the thread in debug builds.
final class CurlExchange: @unchecked Sendable {   // unchecked: it holds libcurl's handle and error buffer, C pointers
    /// libcurl's handle for the transfer, given back once the exchange has ended
    /// (``giveBackHandle()``): from then on only its address is read, as the key the loop finds
    /// exchanges by.
    let easy: UnsafeMutableRawPointer
    let curl: UnsafePointer<TernCurl>
    /// Where the easy handle came from and goes back to.
    private let handles: CurlHandles
    let receiver: any TransportReceiver
    let url: URL
    /// The header fields' list, which libcurl reads until the handle is given back.
    private let headerList: UnsafeMutableRawPointer?
    /// Where libcurl writes what went wrong, and the socket callback whether a descriptor was
    /// wanting.
    let notes: UnsafeMutablePointer<tern_exchange_notes>
    /// The request's method, which decides whether its body may be sent again.
    let method: String
    /// The plain-HTTP origin ("host:port") whose running exchanges the loop counts against its
    /// cap, or `nil` for HTTPS, left to libcurl's.
    let admissionOrigin: String?
    /// The loop that runs the exchange: its idle connections are checked for stray bytes before
    /// one carries this request, and a paused body resumes through it.
    let loop: CurlLoop
    /// The most body bytes the receiver takes, if it has a limit.
    let maximumBodySize: Int?
    /// The keys the server must show one of; none when empty.
    let pinnedKeys: [String]
    /// Whether the response is a stream: what is measured of it so far goes with its head.
    let isStream: Bool
    /// Whether the exchange waits in a line for its origin, the origin's connections all in use
    /// (the loop's for plain HTTP, libcurl's for HTTPS): read from the request's timeout, on
    /// another thread.
    private let queued = Locked(false)
    /// Whether the exchange waits for another to end and free a descriptor (``CurlLoopState``):
    /// read from the idle timeout's watch, on another thread.
    private let lacksADescriptor = Locked(false)

    /// What the loop's thread reads and changes as the exchange runs.
    struct Owned {
        /// Whether ``easy`` has been given back, for the next exchange to take: a late word to
        /// resume must not pause or resume another's transfer.
        var hasGivenBackItsHandle = false
        /// Why the exchange stopped its transfer, once it has.
        var stop: Stop?
        /// Whether it was put in its origin's line: only then is ``queued`` touched again,
        /// sparing each request a lock.
        var wasQueued = false
        var upload: CurlUpload
        var connection: ConnectionGuard
        var response: ResponseReading
        /// When libcurl was last handed the exchange, and when its answer's first line came
        /// after that (uptime nanoseconds): see ``CurlExchange/answersFirstByte(libcurl:total:)``.
        var handedOver: UInt64 = 0
        var answerBegan: UInt64?
    }

    var owned: LoopBound<Owned>

    init(_ request: TransportRequest, receiver: any TransportReceiver, curl: UnsafePointer<TernCurl>, handles: CurlHandles,
         loop: CurlLoop, trusting certificates: URL?) throws {
        guard let url = request.urlRequest.url else { throw URLError(.badURL) }
        // libcurl takes no longer string (CURL_MAX_INPUT_LENGTH); past it the handle had no
        // URL at all, and the request failed as "No URL set".
        let length = url.absoluteString.utf8.count
        guard length <= 8_000_000 else {
            throw URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "The URL is \(length) bytes long; libcurl sends one of at most 8,000,000."])
        }
        // The body first: making its stream can fail, and nothing is to be freed yet then.
        let upload = try CurlUpload(request)
        method = request.urlRequest.httpMethod ?? "GET"
        guard let easy = handles.take() else { throw URLError(.cannotLoadFromNetwork) }
        self.easy = easy
        self.handles = handles
        self.curl = curl
        self.receiver = receiver
        self.url = url
        let isHTTPS = url.scheme?.lowercased() == "https"
        let tlsOrigin = isHTTPS ? "\(url.canonicalHost ?? ""):\(url.port ?? 443)" : nil
        admissionOrigin = url.admissionOrigin
        self.loop = loop
        maximumBodySize = request.maximumBodySize
        pinnedKeys = request.pinnedKeys
        isStream = request.isStream
        notes = .allocate(capacity: 1)
        notes.initialize(to: tern_exchange_notes())
        let options = CurlEasyOptions(curl: curl, easy: easy)
        let configured = options.configure(request, url: url, overTLS: tlsOrigin != nil, upload: upload,
                                           notes: notes, trusting: certificates)
        headerList = configured.headerList
        // Until TLS says which, an HTTPS answer may be HTTP/2.
        owned = LoopBound(Owned(upload: upload, connection: ConnectionGuard(tlsOrigin: tlsOrigin, writesOnce: !HTTPMethod(rawValue: method).isIdempotent),
                                response: ResponseReading(mayBeHTTP2: isHTTPS, requestedEncodings: configured.requestedEncodings)),
                          owner: loop.thread)
        options.setCallbacks(context: Unmanaged.passUnretained(self).toOpaque(), sendsBody: upload.hasBody)
    }

    /// Out of the multi handle by now: it held the exchange until then.
    deinit {
        if !owned.valueInDeinit.hasGivenBackItsHandle { handles.giveBack(easy) }
        if let headerList { curl.pointee.slist_free_all(headerList) }
        notes.deallocate()
        owned.valueInDeinit.upload.close()
    }

    /// Why the exchange stopped its transfer, once it has.
    var stop: Stop? {
        _read { yield owned.value.stop }
        _modify { yield &owned.value.stop }
    }

    var upload: CurlUpload {
        _read { yield owned.value.upload }
        _modify { yield &owned.value.upload }
    }

    var response: ResponseReading {
        _read { yield owned.value.response }
        _modify { yield &owned.value.response }
    }

    // MARK: The line for a connection

    /// Whether the exchange waits its turn for a connection to its origin now.
    var isWaitingForConnection: Bool { queued.withLock { $0 } }

    /// Whether the exchange waits for another to end and free a descriptor now.
    var isWaitingForADescriptor: Bool { lacksADescriptor.withLock { $0 } }

    /// The exchange lacked a descriptor and may wait for another to end: until handed to
    /// libcurl again (``leftTheLine()``).
    func waitsForADescriptor() {
        owned.value.wasQueued = true
        lacksADescriptor.withLock { $0 = true }
    }

    /// The HTTPS origin the exchange goes to, if it does: libcurl, not the loop, holds its line.
    var tlsOrigin: String? { owned.value.connection.tlsOrigin }

    /// The exchange is in its origin's line: the loop's, or, past the cap, libcurl's.
    func waitsForConnection() {
        owned.value.wasQueued = true
        queued.withLock { $0 = true }
    }

    /// The loop hands the exchange to libcurl (which holds no line for plain HTTP), or libcurl
    /// chose its connection: it waits in no line any more.
    func leftTheLine() {
        guard owned.value.wasQueued else { return }
        owned.value.wasQueued = false
        queued.withLock { $0 = false }
        lacksADescriptor.withLock { $0 = false }
    }

    // MARK: The end

    /// How an exchange ended, for its receiver.
    struct Ending {
        /// `nil` when the exchange ended completely.
        let error: (any Error)?
        /// What libcurl measured, unless the exchange was cancelled before its head came.
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
        upload.close()
        let head = (status: response.head.status, isComplete: response.head.isComplete)
        var error = CurlFailure.error(code: code, stop: stop, pinnedKeys: pinnedKeys, presentedKey: presentedKey, head: head, url: url) {
            message(for: $0)
        }
        if let code, stop == nil, crossedAGoAway(code) { error = goAwayError() }
        if error == nil, case .by(let decoder) = response.decoding {
            do { try decoder.finish() } catch let failure { error = Stop.contentDecoding(failure).error(endingWith: CurlCode.writeError, url: url) }
        }
        // A cancel after the head (a stream's reader leaving, its timeouts) ends a transfer that ran.
        return Ending(error: error, metrics: code == nil && !response.head.isComplete ? nil : metrics())
    }

    /// The pin of the key the server's certificate holds, as libcurl gathered it for a pinned
    /// request (`CURLOPT_CERTINFO`) before it compared the key with the pins.
    private func presentedKey() -> String? {
        tern_curl_certificate_pem(curl, easy, 0).flatMap { SubjectPublicKeyInfo.pin(ofCertificatePEM: String(cString: $0)) }
    }

    /// Gives the easy handle back for the next exchange, once this one has ended; on the loop's
    /// thread, which used it last, rather than wherever the exchange is let go of last (its
    /// task may be held long after), which costs throughput with many in flight (see the
    /// Benchmarks article).
    func giveBackHandle() {
        guard !owned.value.hasGivenBackItsHandle else { return }
        owned.value.hasGivenBackItsHandle = true
        handles.giveBack(easy)
    }

    /// Whether the handle has gone back: nothing may pause or resume it then.
    var hasGivenBackItsHandle: Bool { owned.value.hasGivenBackItsHandle }

    /// Tells the receiver how the exchange ended, on the loop's thread: the receiver moves what
    /// it does then elsewhere if that would hold the loop up (see ``TransportCaller``).
    func report(_ ending: Ending) {
        if let metrics = ending.metrics { receiver.didCollect(metrics) }
        receiver.didComplete(with: ending.error)
    }

    /// What libcurl said of `code`, in Tern's words where libcurl's would mislead.
    private func message(for code: Int32) -> String {
        CurlFailure.message(for: code, said: said(code), method: method, lackedADescriptor: notes.pointee.lacked_a_descriptor)
    }

    /// What libcurl said of `code`: its words for this exchange, or for the code.
    func said(_ code: Int32) -> String {
        let written = withUnsafeBytes(of: notes.pointee.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return !written.isEmpty ? written : curl.pointee.easy_strerror(code).map { String(cString: $0) } ?? "libcurl error \(code)"
    }
}
#endif
