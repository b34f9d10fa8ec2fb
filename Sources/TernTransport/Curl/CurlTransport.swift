#if os(Linux)
import CTernCurl
import Foundation
import FoundationNetworking

/// A transport over libcurl's multi interface, for Linux: one event thread per transport drives
/// every transfer (and a second, from the first streamed response, drives streams, on
/// connections of their own), with connection reuse, keep-alive, HTTP/2 where the system's libcurl has it,
/// TLS with peer verification, proxies from the environment as curl reads them
/// (`http_proxy`, `https_proxy`, `no_proxy`), and decompression.
///
/// libcurl is loaded at run time (`libcurl.so.4`, which FoundationNetworking itself links, or
/// the one `TERN_LIBCURL` names), so Tern needs no curl headers to build; where it cannot be
/// loaded, `init()` throws ``CurlUnavailable``.
///
/// ```swift
/// let client = APIClient(configuration: .production, transport: try CurlTransport())
/// ```
///
/// After a transfer that ran alone the thread stays awake for a moment, yielding its core,
/// in case the next request comes at once (as from a caller awaiting one request after
/// another), which then needs no wakeup; then it sleeps until there is work. It stops waiting
/// so while requests come further apart than that.
///
/// It keeps no cookies (each API keeps its own, in its ``CookieJar``) and no cache: each request
/// sends the headers Tern gives it, libcurl's `Accept: */*` and an `Accept-Encoding` of what it
/// undoes itself (gzip, deflate, and brotli and zstd where the system has their libraries),
/// unless the request names its own; `identity` for a request with a `Range`.
public final class CurlTransport: ThreadedTransport, KeyPinningTransport {
    private let library: CurlLibrary
    /// The event loop; internal for the tests, which watch it end.
    let loop: CurlLoop
    /// The loop that runs streams, made with the first: their connections and caps are apart
    /// from requests', so that streams held open never keep a request from a connection.
    /// Internal for the tests, which watch it end.
    let streamLoop = Locked<CurlLoop?>(nil)
    private let connectionCaps: (perHost: Int, total: Int)
    /// The easy handles its finished exchanges gave back; internal for the tests.
    let handles: CurlHandles
    /// The most connections open to one host at once unless a transport is told otherwise: as
    /// many as AsyncHTTPClient opens (browsers open six), so that thousands of requests at once
    /// queue for a few sockets instead of exhausting the process's descriptors.
    package static let defaultConnectionsPerHost = 8
    /// The most connections open at once to all hosts together unless a transport is told
    /// otherwise: as many requests as OkHttp runs at once.
    package static let defaultConnections = 64
    /// The most connections open to one host at once.
    package let maximumConnectionsPerHost: Int
    /// The PEM file of certificate authorities trusted instead of the system's, if any.
    package let trustedCertificates: URL?

    /// Creates a transport with an event thread of its own.
    ///
    /// - Parameters:
    ///   - trustedCertificates: A PEM file of the certificate authorities to trust instead of
    ///     the system's, such as a test CA or a private one. Peers are verified either way, host
    ///     names included. Only they are trusted then, not the system's too.
    ///   - maximumConnectionsPerHost: The most connections open to one host (and port) at once,
    ///     8 by default (as many as AsyncHTTPClient opens; browsers open six); requests past it wait, their timeouts running, for one to free up. HTTP/2 requests
    ///     share one connection whatever the cap. Streamed responses, which stay open as long
    ///     as the server sends, run on connections of their own under a cap of the same size
    ///     (both caps), so that streams held open never keep a request from a connection.
    ///   - maximumConnections: The most connections open at once to all hosts together (at
    ///     least `maximumConnectionsPerHost`; 64 by default, as many requests as OkHttp runs), which holds the descriptors a process uses when
    ///     it talks to many hosts at once; requests past it wait, over plain HTTP in the order
    ///     they came.
    /// - Throws: ``CurlUnavailable`` when libcurl cannot be loaded, or `trustedCertificates`
    ///   cannot be read or holds no certificate in PEM.
    public convenience init(
        trusting trustedCertificates: URL? = nil,
        maximumConnectionsPerHost: Int = 8,
        maximumConnections: Int = 64
    ) throws(CurlUnavailable) {
        try self.init(keepingHandles: nil, trusting: trustedCertificates, maximumConnectionsPerHost: maximumConnectionsPerHost,
                      maximumConnections: maximumConnections)
    }

    /// The same, keeping finished exchanges' handles for the next ones if `keepingHandles`,
    /// or if it is `nil` and the libcurl loaded resets them safely; internal, for the tests of
    /// handles kept, whatever libcurl runs them.
    init(
        keepingHandles: Bool?,
        trusting trustedCertificates: URL? = nil,
        maximumConnectionsPerHost: Int = CurlTransport.defaultConnectionsPerHost,
        maximumConnections: Int = CurlTransport.defaultConnections
    ) throws(CurlUnavailable) {
        if let trustedCertificates { try Self.check(authorities: trustedCertificates) }
        library = try CurlLibrary.shared.get()
        loop = try CurlLoop(curl: library.api, connectionsPerHost: max(1, maximumConnectionsPerHost), totalConnections: maximumConnections)
        // A libcurl whose reset handles are not safe gets a new handle for every exchange.
        let keeps = keepingHandles ?? library.resetHandlesAreSafe
        handles = CurlHandles(library: library, capacity: keeps ? CurlLoop.idleConnections : 0)
        executor = CurlTaskExecutor(loop: loop)
        connectionCaps = (max(1, maximumConnectionsPerHost), maximumConnections)
        self.maximumConnectionsPerHost = max(1, maximumConnectionsPerHost)
        self.trustedCertificates = trustedCertificates
    }

    /// Fails where libcurl would fail each request later, with words about TLS: a file that
    /// cannot be read (a wrong path, a directory) or holds no certificate in PEM (one in DER).
    /// Only a regular file of a bundle's size is read: a pipe would wait, a device never end.
    private static func check(authorities file: URL) throws(CurlUnavailable) {
        guard file.isFileURL else { throw CurlUnavailable(trusting: file, "it is not a file URL") }
        var status = stat()
        guard stat(file.path, &status) == 0 else { throw CurlUnavailable(trusting: file, String(cString: strerror(errno))) }
        guard status.st_mode & S_IFMT == S_IFREG, status.st_size <= 64 << 20 else {
            throw CurlUnavailable(trusting: file, "it is not a regular file of at most 64 MiB")
        }
        guard let contents = try? Data(contentsOf: file) else { throw CurlUnavailable(trusting: file, "it cannot be read") }
        guard contents.range(of: Data("CERTIFICATE-----".utf8)) != nil else {
            throw CurlUnavailable(trusting: file, "it holds no certificate in PEM (-----BEGIN CERTIFICATE-----)")
        }
    }

    /// The libcurl this process loaded, such as "libcurl/7.88.1 OpenSSL/3.0.19 nghttp2/1.52.0",
    /// or why there is none.
    public static var libraryVersion: Result<String, CurlUnavailable> {
        CurlLibrary.shared.map(\.version)
    }

    deinit {
        loop.close()
        streamLoop.withLock { $0 }?.close()
    }

    /// The loop for streams, made now if it was not; the requests' loop if libcurl cannot
    /// make another. It keeps few idle connections: a stream holds its own for long, and those
    /// left idle when streams end held, under a low descriptor limit, every descriptor requests
    /// could have.
    private func loopForStreams() -> CurlLoop {
        streamLoop.withLock { streamLoop in
            if let streamLoop { return streamLoop }
            let made = try? CurlLoop(curl: library.api, connectionsPerHost: connectionCaps.perHost, totalConnections: connectionCaps.total,
                                     idleConnections: 4)
            made?.pair(with: loop)
            streamLoop = made
            return made ?? loop
        }
    }

    /// The transport's event thread as a task executor: a task that prefers it sends its
    /// requests and resumes with their answers there, sparing a thread hand-off each way. Its
    /// requests are built there, and their ends heard there, even while other transfers run,
    /// unless their stages call the app's code; only an answer to decode (a `Decodable` value,
    /// or text) is decoded on another thread then.
    /// Keep such tasks to sending requests and light work on their answers: every transfer of
    /// the transport waits while one of them runs.
    ///
    /// ```swift
    /// await withTaskExecutorPreference(client.transport.taskExecutor) {
    ///     for id in ids { _ = try? await client.request(route: .get("/items/\(id)")).value as Data }
    /// }
    /// ```
    public var taskExecutor: (any TaskExecutor)? { executor }

    private let executor: CurlTaskExecutor

    /// Runs `work` on the transport's thread when it has no transfer running, and returns
    /// `true`; a request's first stages run there, and what they send starts without another
    /// hop. A busy thread declines, and the caller runs `work` elsewhere; but a task that
    /// prefers the thread (``taskExecutor``) runs there already, and `work` runs at once.
    package func runIfIdle(_ work: @escaping @Sendable () -> Void) -> Bool {
        if loop.isRunningJob {
            work()
            return true
        }
        return loop.scheduleIfIdle(work)
    }

    /// Where the caller runs: on the requests' loop, on the streams' (which carries a streamed
    /// request's answer when it does not open the stream), or elsewhere.
    package var caller: TransportCaller {
        guard tern_thread_loop() != nil else { return .elsewhere }
        if loop.isCurrent { return loop.caller }
        return streamLoop.withLock { $0 }?.caller ?? .elsewhere
    }

    /// `true`: libcurl checks the server's key against the pins after verifying its chain and
    /// before sending (`CURLOPT_PINNEDPUBLICKEY`), and reuses only a connection made with the
    /// same pins.
    package var canPinKeys: Bool { true }

    /// The authorities it trusts instead of the system's, as the digest of their file (its
    /// path when it cannot be read).
    package var trustMark: String? {
        guard let file = trustedCertificates else { return nil }
        let contents = try? Data(contentsOf: file)
        return "authorities:" + (contents.map { HTTPCache.digest(of: String(decoding: $0, as: UTF8.self)) } ?? file.path)
    }

    /// Starts sending `request` and reports its exchange to `receiver`.
    public func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
        let exchange: CurlExchange
        let loop = request.isStream ? loopForStreams() : self.loop
        do {
            exchange = try CurlExchange(request, receiver: receiver, curl: library.api, handles: handles, loop: loop,
                                    trusting: trustedCertificates)
        } catch {
            receiver.didComplete(with: error)
            return NoTask()
        }
        loop.start(exchange)
        return CurlTask(exchange: exchange, loop: loop)
    }

    /// Cancels through the loop, which knows whether the exchange is still running.
    private struct CurlTask: ConnectionWaiting {
        let exchange: CurlExchange
        let loop: CurlLoop

        var isWaitingForConnection: Bool { exchange.isWaitingForConnection }
        var isWaitingForADescriptor: Bool { exchange.isWaitingForADescriptor }

        func cancel() {
            loop.cancel(exchange)
        }

        func resumeReceiving() {
            _ = loop.schedule { [exchange] in exchange.resumeReceiving() }
        }
    }
}
#endif
