import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A transport over a `URLSession`: the default on Apple platforms, and on Linux where libcurl
/// cannot be loaded (there ``CurlTransport`` is the default).
///
/// By default each API gets a session of its own, made from `URLSessionConfiguration.default`,
/// whose delegate passes each exchange's events to Tern as they come. Its calls run on one
/// serial queue, since a task's chunks must arrive in order, and each exchange is completed
/// (validated and parsed) right there: a hop to a concurrent queue cost more than parsing in
/// parallel gained (measured with `EndToEndAB`; see the Benchmarks article). When the transport is released (after the last request that uses it
/// has finished) that session is invalidated. On Linux, requests to a plain-HTTP origin past the
/// configuration's `httpMaximumConnectionsPerHost` wait their turn in Tern, in order.
/// Streamed responses, which stay open as long as the server sends, go through a second session
/// of the same configuration, made with the first: its connections, and its cap per host, are
/// apart from requests', so that streams held open never keep a request from a connection.
///
/// A session passed in stays the caller's: it is used as it is and never invalidated, and since
/// Tern is not its delegate, its responses arrive whole, so a body over the limit is refused
/// only once it has arrived.
public final class URLSessionTransport: KeyPinningTransport {
    /// The session requests go through.
    package let session: URLSession
    /// The exchanges in flight, when the session is ours.
    private let exchanges: SessionExchanges?
    /// On Apple platforms, a transport of the same configuration for each set of pinned keys:
    /// a connection checked for one set is never reused by a request with another, or with
    /// none.
    private let pinnedTransports = Locked([[String]: URLSessionTransport]())
    /// Whether this transport is the one a transport made for streams.
    private let carriesStreams: Bool
    /// For streamed responses, which stay open as long as the server sends, a transport of the
    /// same configuration and pins, made with the first: a session of its own, whose connections
    /// and cap per host are apart from requests', so that streams held open never keep a
    /// request from a connection (FoundationNetworking caps each session's connections per host
    /// in its libcurl too).
    private let streamTransport = Locked<URLSessionTransport?>(nil)
    /// For a session of the caller's, a mark of its own for the cache: its delegate may trust
    /// other authorities than the system's, and its credential storage answers challenges that
    /// Tern never sees, so its answers serve its own requests alone.
    private let callersSessionMark: String?
    /// The configuration's `httpAdditionalHeaders`, which Tern adds to each request itself
    /// (where the request has none of that name): a session adds them to every task, the hop
    /// of a redirect to another origin included, which must carry no credential.
    private let sessionHeaders: [String: String]

    /// Creates a transport over a new session made from `configuration`, which keeps no cookies
    /// (each API keeps its own, in its ``CookieJar``) and no credential storage. Its
    /// `httpAdditionalHeaders` are sent as an API's common headers are: where a request has
    /// none of the name, and, on a redirect that left the origin, none that carries a
    /// credential. On Linux it keeps no `URLCache` either
    /// (Tern's ``HTTPCache`` caches over any transport): through FoundationNetworking's cache, a
    /// cancel racing a task's completion crashed the process in one run of the cancel storms in six.
    public convenience init(configuration: URLSessionConfiguration = .default) {
        self.init(configuration: configuration, pins: [], carriesStreams: false)
    }

    /// A transport whose servers must show one of `pins`, if any; for streams alone if
    /// `carriesStreams`.
    private init(configuration: URLSessionConfiguration, pins: [String], carriesStreams: Bool) {
        self.carriesStreams = carriesStreams
        callersSessionMark = nil
        // A copy, so that the caller's stays as it was.
        let configuration = (configuration.copy() as? URLSessionConfiguration) ?? configuration
        sessionHeaders = Self.fields(configuration.httpAdditionalHeaders)
        configuration.httpAdditionalHeaders = nil
        // A password it answered a challenge with below Tern would be invisible to the cache.
        configuration.urlCredentialStorage = nil
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        #if canImport(FoundationNetworking)
        // FoundationNetworking looks a task up in its cache before it makes the task's protocol
        // and after the transfer: a cancel meeting a completion then crashed the process ("a
        // task that is not in the registry") in runs of the cancel storms; with no cache, in
        // none.
        configuration.urlCache = nil
        let exchanges = SessionExchanges(connectionsPerHost: configuration.httpMaximumConnectionsPerHost)
        #else
        let exchanges = SessionExchanges(connectionsPerHost: nil, pins: pins)
        #endif
        let delegateQueue = OperationQueue()
        delegateQueue.name = "tern.transport"
        delegateQueue.maxConcurrentOperationCount = 1
        // FoundationNetworking queues a delegate call per chunk received, with no backpressure;
        // at a lower priority than its own work, a flood of chunks outran these calls (and so
        // the size limit) for seconds.
        delegateQueue.underlyingQueue = exchanges.queue
        session = URLSession(configuration: configuration, delegate: exchanges, delegateQueue: delegateQueue)
        self.exchanges = exchanges
    }

    /// Creates a transport over a session of the caller's, which is never invalidated here:
    /// keep it valid while any API uses the transport, since URLSession stops the process when a
    /// task is made on an invalidated session (stop the API's streams, retries and requests
    /// first). Its configuration's cookie storage, if any, keeps and sends cookies besides the
    /// API's jar.
    /// What the session adds below Tern (those cookies, its `httpAdditionalHeaders`, a password
    /// its delegate answers a challenge with) goes with every hop of a redirect, to other
    /// origins too: keep credentials out of it. Its completion handlers get each answer whole,
    /// at its end: no idle timeout applies, nothing is reported as it moves, and a stream gets
    /// its body only once the server ends it. A challenge its delegate declines is not a cancel:
    /// the server's answer (a 401) is the response, or the request fails with
    /// `URLError.userCancelledAuthentication`.
    public init(session: URLSession) {
        self.session = session
        exchanges = nil
        carriesStreams = false
        callersSessionMark = "session:" + UUID().uuidString
        sessionHeaders = [:]
    }

    deinit {
        guard exchanges != nil else { return }
        // Lets tasks still running finish; every request holds the transport, so none are left.
        // The last request often releases the transport inside a delegate call, on this
        // session's own delegate queue: invalidating (and freeing) the session from there races
        // with FoundationNetworking's teardown on Linux. So it is done from another queue.
        let session = session
        DispatchQueue.global().async { session.finishTasksAndInvalidate() }
    }

    /// Starts sending `request` and reports its exchange to `receiver`.
    public func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
        guard let exchanges else { return sendThroughCallersSession(request, to: receiver) }
        let request = withSessionHeaders(request)
        if request.pinnedKeys != exchanges.pins, canPinKeys {
            return pinnedTransport(for: request.pinnedKeys).send(request, to: receiver)
        }
        if request.isStream, !carriesStreams {
            return transportForStreams(pins: exchanges.pins).send(request, to: receiver)
        }
        return exchanges.send(request, to: receiver, on: session)
    }

    /// On Apple platforms (from macOS 12, iOS 15, tvOS 15, watchOS 8), with a session of its
    /// own: its servers' trust is evaluated, then their keys are checked against the pins.
    /// FoundationNetworking cannot evaluate a server's trust, nor can a caller's session, which
    /// is not Tern's to watch.
    /// `nil` over a session of its own: the system's authorities, which its session's delegate
    /// does not replace. A caller's session has a mark of its own.
    package var trustMark: String? { callersSessionMark }

    /// The credentials the session sends with `request` besides those it carries: its own
    /// headers' (``sessionHeaders``), and a caller's session's, with the cookies of its storage
    /// (FoundationNetworking sends them whatever the request's `httpShouldHandleCookies` says).
    /// The cache serves what one account was answered only to requests that send the same.
    package func credentialsItAdds(to request: TransportRequest) -> String? {
        let names = request.credentialNames
        guard exchanges == nil else {
            let added = withSessionHeaders(request).urlRequest
            let sent = names.sorted().compactMap { name in
                request.urlRequest.value(forHTTPHeaderField: name) == nil ? added.value(forHTTPHeaderField: name).map { name + ": " + $0 } : nil
            }
            return sent.isEmpty ? nil : sent.joined(separator: "\n")
        }
        let configuration = session.configuration
        var sent = Self.fields(configuration.httpAdditionalHeaders).filter { names.contains($0.key.lowercased()) }.map { $0.key.lowercased() + ": " + $0.value }
        if configuration.httpShouldSetCookies, let url = request.urlRequest.url, let cookies = configuration.httpCookieStorage?.cookies(for: url) {
            sent += cookies.map { "cookie " + $0.name + "=" + $0.value }
        }
        return sent.isEmpty ? nil : sent.sorted().joined(separator: "\n")
    }

    /// `request` with the ``sessionHeaders`` it lacks; on a hop that left its origin, none
    /// that carries a credential.
    private func withSessionHeaders(_ request: TransportRequest) -> TransportRequest {
        guard !sessionHeaders.isEmpty else { return request }
        var request = request
        let credentials = request.hasLeftOrigin ? request.credentialNames : []
        for (name, value) in sessionHeaders where request.urlRequest.value(forHTTPHeaderField: name) == nil && !credentials.contains(name.lowercased()) {
            request.urlRequest.setValue(value, forHTTPHeaderField: name)
        }
        return request
    }

    /// A configuration's `httpAdditionalHeaders` as header fields.
    private static func fields(_ headers: [AnyHashable: Any]?) -> [String: String] {
        var fields: [String: String] = [:]
        for (name, value) in headers ?? [:] {
            guard let name = name.base as? String else { continue }
            fields[name] = value as? String ?? String(describing: value)
        }
        return fields
    }

    package var canPinKeys: Bool {
        #if canImport(Security) && canImport(CryptoKit) && !canImport(FoundationNetworking)
        guard #available(macOS 12.0, iOS 15.0, tvOS 15.0, watchOS 8.0, *) else { return false }
        return exchanges != nil
        #else
        false
        #endif
    }

    /// The transport for requests pinned to `pins`: this one for its own pins, or one made for
    /// them, with this one's configuration, once.
    private func pinnedTransport(for pins: [String]) -> URLSessionTransport {
        pinnedTransports.withLock { transports in
            if let transport = transports[pins] { return transport }
            let transport = URLSessionTransport(configuration: session.configuration, pins: pins, carriesStreams: false)
            transports[pins] = transport
            return transport
        }
    }

    /// The transport for this one's streams, made now if it was not.
    private func transportForStreams(pins: [String]) -> URLSessionTransport {
        streamTransport.withLock { transport in
            if let transport { return transport }
            let made = URLSessionTransport(configuration: session.configuration, pins: pins, carriesStreams: true)
            transport = made
            return made
        }
    }
}

extension URLSessionTransport {
    /// The largest body file sent from memory rather than streamed from disk, on Linux.
    static let inMemoryUploadLimit = 16 << 20

    /// The request to hand URLSession, with its body file or a new stream of its body, and the
    /// file to upload with `uploadTask(with:fromFile:)`, if any. Throws what making or reading
    /// the stream threw.
    ///
    /// On Linux, never a file: FoundationNetworking reads a file body asynchronously and pauses
    /// the transfer while it waits, and cancelling such an upload crashes the process (a `try!`
    /// on pausing a handle already gone) within a few hundred cancels. A body held in memory or
    /// read from a stream never pauses, and survives the same storm. A file or a stream of known
    /// length up to ``inMemoryUploadLimit`` is read into memory and goes out with its
    /// `Content-Length`; a larger one is streamed, which FoundationNetworking can only send
    /// chunked, without a length: a ``SegmentStream`` holds it to the length it had.
    ///
    /// A request for a range that names no encodings asks for `identity`. On Linux an `Expect`
    /// field is not sent, and a blank value goes out empty.
    static func prepare(_ request: TransportRequest) throws -> (URLRequest, uploadFile: URL?) {
        var urlRequest = request.urlRequest
        if urlRequest.value(forHTTPHeaderField: "Accept-Encoding") == nil, (urlRequest.allHTTPHeaderFields ?? [:]).asksForARange {
            urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        }
        #if canImport(FoundationNetworking)
        // FoundationNetworking takes a `100 Continue` for the answer and fails the upload
        // (URLError -1011): the body goes at once, with no `Expect`, as over libcurl.
        if urlRequest.value(forHTTPHeaderField: "Expect") != nil { urlRequest.setValue(nil, forHTTPHeaderField: "Expect") }
        // Its libcurl drops a field whose value is blank; an empty one it sends as such.
        for (name, value) in urlRequest.allHTTPHeaderFields ?? [:] where !value.isEmpty && value.isBlankFieldValue {
            urlRequest.setValue("", forHTTPHeaderField: name)
        }
        #endif
        switch request.body {
        case .inRequest:
            return (urlRequest, nil)
        case .stream(let stream):
            #if canImport(FoundationNetworking)
            if let length = stream.length {
                if length <= inMemoryUploadLimit {
                    urlRequest.httpBody = try Self.read(stream.makeStream(), length: Int(length))
                } else {
                    urlRequest.httpBodyStream = SegmentStream([.stream(stream, length: length)])
                }
                return (urlRequest, nil)
            }
            #endif
            urlRequest.httpBodyStream = try stream.makeStream()
            return (urlRequest, nil)
        case .file(let file):
            #if canImport(FoundationNetworking)
            // Sized without opening it, and read as a RegularFile: each refuses a file swapped
            // for a pipe since it was checked, where reading one would wait for a writer on the
            // API's queue (and a pipe's size, 0, would make the body empty).
            let size = try RegularFile.size(of: file)
            let body = SegmentStream([.file(file, length: size)])
            if size > inMemoryUploadLimit {
                urlRequest.httpBodyStream = body
            } else {
                urlRequest.httpBody = try Self.read(body, length: Int(size))
            }
            return (urlRequest, nil)
            #else
            return (urlRequest, file)
            #endif
        }
    }

    /// The bytes ``prepare(_:)`` reads of `body` into memory: on Linux, a file's or a stream's of
    /// known length, up to ``inMemoryUploadLimit``; elsewhere none.
    static func bytesReadIntoMemory(for body: TransportBody) -> Int {
        #if canImport(FoundationNetworking)
        let length: Int64? = switch body {
        case .inRequest: nil
        case .stream(let stream): stream.length
        case .file(let file): try? RegularFile.size(of: file)
        }
        return length.map { $0 <= inMemoryUploadLimit ? Int($0) : 0 } ?? 0
        #else
        return 0
        #endif
    }

    /// What ``prepare(_:)`` makes of `request`, or `nil` once `receiver` has heard why it failed.
    static func prepared(_ request: TransportRequest, reportingTo receiver: any TransportReceiver) -> (URLRequest, URL?)? {
        do {
            return try prepare(request)
        } catch {
            receiver.didComplete(with: error)
            return nil
        }
    }

    /// The `length` bytes of `stream`; throws ``BodyLengthMismatch`` when it ends before them or
    /// goes on after them, and what it failed with when it fails.
    private static func read(_ stream: InputStream, length: Int) throws -> Data {
        stream.open()
        defer { stream.close() }
        var body = Data(count: length)
        var filled = 0
        try body.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) in
            let bytes = buffer.bindMemory(to: UInt8.self)
            while filled < length {
                guard let base = bytes.baseAddress else { break }
                let count = stream.read(base + filled, maxLength: length - filled)
                guard count >= 0 else { throw stream.readFailure }
                // Asked at the end of a stream without an error, FoundationNetworking's
                // `streamError` crashes: an early end is told apart by the count alone.
                guard count > 0 else { throw BodyLengthMismatch(statedLength: Int64(length), actualLength: Int64(filled)) }
                filled += count
            }
        }
        // A stream held to its length (a file's `SegmentStream`) fails, rather than gives, the
        // byte past it: that is the file running long too, not its end.
        var extra: UInt8 = 0
        let past = stream.read(&extra, maxLength: 1)
        guard past == 0 else {
            if past < 0 { throw stream.readFailure }
            throw BodyLengthMismatch(statedLength: Int64(length), actualLength: Int64(length) + 1)
        }
        return body
    }
}
