import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tern

/// A transport that records real exchanges into an HTTP Archive (HAR 1.2) file and replays them,
/// so that a test runs once against the real server and offline, exactly alike, ever after.
///
/// ```swift
/// let tape = try RecordingTransport(file: fixtures.appendingPathComponent("products.har"), mode: .replay)
/// let recordedShop = ShopAPI(client: APIClient(configuration: .production, transport: tape))
/// let replayed = try await recordedShop.products(page: 1).value   // as recorded, no network
/// ```
///
/// Everything above the transport is the real pipeline, as with ``StubTransport``: the delegate
/// signs each attempt and refreshes its token, plugins see each attempt, retries and redirects
/// are Tern's (each hop and each attempt is an exchange of its own), parsers decode. A request
/// is answered by the first recorded exchange that matches it and has not answered yet (the
/// same request twice is answered in recorded order), else by the last that matches, again.
/// A request none matches fails in replay with an ``UnmatchedRequest`` that lists the nearest
/// recorded exchanges and why each does not match, as `APIError.transportFailed`'s underlying
/// error.
///
/// The file is written after each exchange recorded, sorted by URL and stable, with the
/// credentials and the `secrets` of its ``RecordingOptions`` hidden. Bodies are kept decoded
/// (decompressed), as text or Base64; a request body over 64 KiB by its SHA-256; a response
/// body over 64 MiB not at all (the request fails, saying so). Transports recording into one
/// file at once share it. A browser's exported HAR replays as it is.
public final class RecordingTransport: KeyPinningTransport, Sendable {
    /// Whether requests go to the network, to the file, or to the file first.
    public enum Mode: String, Sendable {
        /// Every request goes to the real transport, and the file is written anew.
        case record
        /// No request goes to the network: each is answered from the file, or fails.
        case replay
        /// Requests the file answers are replayed; the others are sent, and recorded.
        case missing
    }

    /// The mode the transport runs in.
    package let mode: Mode
    /// The real transport, when given; the default one is taken only when a request is sent.
    private let givenUpstream: (any Transport)?
    private let options: RecordingOptions
    /// What recording measures with, and, when given, what replay paces streams on.
    private let clock: any APIClock
    private let pacing: (any APIClock)?
    private let recording: Locked<Recording>
    /// The recording's file, named in errors.
    private let file: URL
    /// Where replayed events are reported, one at a time.
    private let queue = DispatchQueue(label: "tern.recording-transport")

    /// Creates a transport for the recording in `file`.
    ///
    /// - Parameters:
    ///   - file: The HAR file: read unless the mode is `record`, written after each exchange
    ///     recorded (its directory made if need be).
    ///   - mode: The mode; when `nil`, the `TERN_RECORDING` environment variable's (`record`,
    ///     `replay` or `missing`; `replay` for any other value), and `missing` without it. CI
    ///     sets `TERN_RECORDING=replay`.
    ///   - upstream: The real transport, which records go through: the default one when `nil`.
    ///   - options: How requests are matched, and the secrets kept out of the file.
    ///   - clock: When given, replayed streams come at their recorded pace on it (a `TestClock`
    ///     moved by the test); without it, at once.
    /// - Throws: The error reading or decoding an existing file: a `DecodingError` names the
    ///   field it stopped at. In `record` mode, an error too when the file is there and is no
    ///   recording: it is not written over.
    public init(file: URL, mode: Mode? = nil, upstream: (any Transport)? = nil,
                options: RecordingOptions = RecordingOptions(), clock: (any APIClock)? = nil) throws {
        let mode = mode ?? Self.environmentMode(ProcessInfo.processInfo.environment["TERN_RECORDING"])
        self.mode = mode
        givenUpstream = upstream
        self.options = options
        self.clock = clock ?? SystemClock.shared
        pacing = clock
        self.file = file
        recording = Locked(try Recording(file: file, options: options, writes: mode != .replay, fresh: mode == .record))
    }

    /// The mode `TERN_RECORDING` names: `missing` when unset or empty, and `replay` when it
    /// names none, so that a misspelt variable in CI never reaches the network.
    static func environmentMode(_ value: String?) -> Mode {
        guard let value, !value.isEmpty else { return .missing }
        return Mode(rawValue: value.lowercased()) ?? .replay
    }

    /// Where a recording with no exchange is, for the words of a request it cannot answer: a
    /// path from `#filePath` gone wrong reads as a file that does not exist.
    private static func emptySource(_ file: URL) -> String {
        "in \(file.path)" + (FileManager.default.fileExists(atPath: file.path) ? "" : ", which does not exist")
    }

    /// What records go through: made, when it is the default one, only once a request needs it.
    private var upstream: any Transport { givenUpstream ?? DefaultTransport.shared }

    /// `true` in replay, where no server is reached and every pin passes, as with stubs;
    /// otherwise the real transport's.
    package var canPinKeys: Bool { mode == .replay || (upstream as? any KeyPinningTransport)?.canPinKeys == true }

    /// Its own, with its upstream's: a replayed answer, or one recorded through authorities of
    /// the test's, kept by a cache shared with the app, never answers the app.
    package var trustMark: String? {
        "recorded" + (givenUpstream.map(CacheStage.trustMark(of:)).map { ":" + ($0 ?? "system") } ?? "")
    }

    /// Its upstream's, when recording through a session with credentials of its own.
    package func credentialsItAdds(to request: TransportRequest) -> String? {
        (givenUpstream as? any KeyPinningTransport)?.credentialsItAdds(to: request)
    }

    /// Answers `request` from the recording, or sends it and records the exchange, as the mode
    /// says.
    public func send(_ request: TransportRequest, to receiver: any TransportReceiver) -> any TransportTask {
        let exchange = Exchange(receiver: receiver, queue: queue)
        let sent: SentBody
        do {
            sent = try SentBody(of: request)
        } catch {
            queue.async { exchange.complete(with: error) }
            return exchange
        }
        let recorded = StubTransport.recorded(request, body: sent.kept, bodyLength: sent.count)
        var receiver = receiver
        if mode != .record {
            let key = MatchKey(method: recorded.method, url: request.urlRequest.url?.absoluteString ?? recorded.target)
            let options = options
            // A credential's or a named field's value, however short (too short to be searched
            // for in the words), is not told where the words name its field.
            let redactor = Redactor(secrets: options.secrets + request.credentialHeaders)
            let answer = recording.withLock { $0.answer(key, headers: recorded.headers, body: sent, options: options, telling: redactor) }
            switch answer {
            case .success(let entry):
                return replay(entry, for: request, bodyLength: recorded.bodyLength, to: exchange)
            case .failure(let unanswered):
                let told = RecordedRequest(method: recorded.method, target: redactor.hidingNamedItems(inTarget: recorded.target),
                                           headers: recorded.headers, body: recorded.body, bodyLength: recorded.bodyLength)
                var error = UnmatchedRequest(request: told, mismatches: unanswered.nearest, subject: "recorded exchange",
                                             emptySource: Self.emptySource(file),
                                             hidden: Redactor.values(hiddenIn: HTTPArchive.request(request, recorded: recorded, body: sent),
                                                                     secrets: options.secrets + request.credentialHeaders))
                // A credential a replayed answer issued is the file's placeholder, which no server
                // takes: sent, its refusal would be recorded, and answer every later run.
                if mode == .missing { error.unsentCredential = redactor.headerHoldingPlaceholder(in: request.urlRequest.allHTTPHeaderFields ?? [:]) }
                guard mode == .missing, error.unsentCredential == nil else {
                    queue.async { [error] in exchange.run(.failure(error), for: request, bodyLength: recorded.bodyLength, clock: SystemClock.shared) }
                    return exchange
                }
                receiver = UnansweredRequestReceiver(passingTo: receiver, unanswered: error, file: file)
            }
        }
        let entryRequest = HTTPArchive.request(request, recorded: recorded, body: sent)
        let credentialHeaders = request.credentialHeaders
        recording.withLock { $0.began() }
        let recorder = RecordingReceiver(passingTo: receiver, request: entryRequest, secrets: options.secrets + credentialHeaders,
                                         clock: clock, ended: { [self] in recording.withLock { $0.ended() } }) { [self] entry in
            recording.withLock { recording -> (any Error)? in
                do {
                    try recording.record(entry, credentialHeaders: credentialHeaders)
                    return nil
                } catch {
                    return error
                }
            }
        }
        return RecordedTask(upstream.send(Self.sending(request, as: sent), to: recorder), recorder: recorder)
    }

    /// `request` as it goes to the server: a file's or a stream's body read whole to be
    /// recorded goes as those bytes, not read again, so that the server gets what the recording
    /// says it got (a file changed in between, a stream that gives other bytes each time) and
    /// a stream is made once an attempt. A stream stays a stream of the length it stated: one
    /// of no stated length goes chunked, as the app sends it.
    private static func sending(_ request: TransportRequest, as sent: SentBody) -> TransportRequest {
        guard sent.isWhole else { return request }
        var request = request
        let kept = sent.kept
        switch request.body {
        case .inRequest: break
        case .file: request.body = .stream(BodyStream(length: Int64(kept.count)) { InputStream(data: kept) })
        case .stream(let stream): request.body = .stream(BodyStream(length: stream.length) { InputStream(data: kept) })
        }
        return request
    }

    private func replay(_ entry: HTTPArchive.Entry, for request: TransportRequest, bodyLength: Int, to exchange: Exchange) -> any TransportTask {
        let answer = entry.answer(to: request.urlRequest.url, pacedOn: pacing)
        let clock = pacing ?? SystemClock.shared
        queue.async { exchange.run(.success(answer), for: request, bodyLength: bodyLength, clock: clock) }
        return exchange
    }
}
