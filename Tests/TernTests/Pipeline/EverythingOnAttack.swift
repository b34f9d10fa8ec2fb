#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if os(Linux)
import Foundation
import Testing
@testable import Tern
import TernTesting

/// One API with every feature on at once, as an app turns them on, for the
/// `EverythingOn*AttackTests`: over HTTPS to a ``RawServer`` behind a ``TLSRelay`` (a test CA),
/// with a disk cache, a cookie jar in a file, the server's key pinned, an idle timeout, retries,
/// `X-Api-Key` named sensitive to the redirect policy, a logger into a buffer, a delegate that
/// signs with a bearer token and refreshes it on a 401, and a `RecordingTransport` recording
/// over a `CurlTransport` that trusts the test CA.
///
/// Every secret it hands out (tokens, the key, cookie values) is long and unique, so that a
/// test can look for each in the cache's directory, the recording and the log.
final class EverythingOn: Sendable {
    /// What the server's script does with a request other than `POST /token`: answer on the
    /// connection, returning whether to read the next request on it.
    typealias Handler = @Sendable (_ request: Request, _ connection: RawServer.Connection) -> Bool

    /// A request as the server read it.
    struct Request: Sendable {
        let text: String
        /// The request line's method and path (with its query).
        let method: String
        let path: String
        /// Whether it carried the newest token the server issued.
        let isAuthorized: Bool

        /// The value of the header `name`, whatever its case.
        func header(_ name: String) -> String? {
            for line in text.split(separator: "\r\n").dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].lowercased() == name.lowercased() {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }
    }

    /// The test's own folder: the cache, the jar, the recording and the files, nothing else.
    let folder: URL
    let certificates: TestCertificates
    private let server: RawServer
    private let relay: TLSRelay
    /// Every request the server read, `POST /token` included, as text.
    let received: Recorder<String>
    /// What the logger wrote.
    let log = Recorder<String>()
    let apiKey = "key-" + UUID().uuidString
    /// The delegate's first token, which the server refuses (so the first request refreshes).
    let staleToken: String
    let firstRefreshToken: String
    /// The jar every API made here shares, in its file.
    let jar: CookieJar
    /// The delegate every API made here shares.
    let signer: TokenSigner
    /// Every token and cookie value the server handed out.
    private let issued: Recorder<String>
    /// Every access token issued, the newest last.
    private let accessTokens: Recorder<String>

    var cacheDirectory: URL { folder.appendingPathComponent("cache") }
    var recordingFile: URL { folder.appendingPathComponent("recording/everything.har") }
    var jarFile: URL { folder.appendingPathComponent("jar/cookies.json") }
    var files: URL { folder.appendingPathComponent("files") }
    var url: String { relay.baseURL }
    var serverPin: String { get throws { try certificates.pin(ofKey: "server.key") } }

    /// A server whose `POST /token` issues tokens, and `handler` answers the rest.
    init(_ handler: @escaping Handler) throws {
        folder = try newFolder("tern-everything-")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("files"), withIntermediateDirectories: true)
        certificates = try TestCertificates()
        jar = CookieJar(file: folder.appendingPathComponent("jar/cookies.json"))
        let (stale, firstRefresh) = ("stale-" + UUID().uuidString, "refresh-" + UUID().uuidString)
        (staleToken, firstRefreshToken) = (stale, firstRefresh)
        signer = TokenSigner(access: stale, refresh: firstRefresh)
        let (received, issued, accessTokens) = (Recorder<String>(), Recorder<String>(), Recorder<String>())
        (self.received, self.issued, self.accessTokens) = (received, issued, accessTokens)
        server = try RawServer { connection in
            while let head = connection.readHead() {
                // An upload's body is left to the handler, to read as it likes.
                let length = head.hasPrefix("POST /upload") ? 0 : Self.contentLength(of: head)
                guard let body = connection.readBody(length) else { return }
                let text = head + body
                received.append(text)
                let line = text.prefix { $0 != "\r" }.split(separator: " ")
                let method = line.first.map(String.init) ?? ""
                let path = line.count > 1 ? String(line[1]) : ""
                if method == "POST", path == "/token" {
                    let (access, refresh) = ("access-" + UUID().uuidString, "refresh-" + UUID().uuidString)
                    issued.append(access)
                    issued.append(refresh)
                    accessTokens.append(access)
                    let body = #"{"access_token": "\#(access)", "refresh_token": "\#(refresh)"}"#
                    guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"
                                          + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)") else { return }
                    continue
                }
                let token = accessTokens.items.last
                let authorized = token.map { text.contains("Authorization: Bearer \($0)\r\n") } ?? false
                guard handler(Request(text: text, method: method, path: path, isAuthorized: authorized), connection) else { return }
            }
        }
        relay = try TLSRelay(certificates: certificates, to: server.port)
    }

    deinit {
        relay.stop()
        server.stop()
        try? FileManager.default.removeItem(at: folder)
    }

    /// The `Content-Length` a request's head states; 0 without one.
    static func contentLength(of head: String) -> Int {
        head.split(separator: "\r\n").lazy.compactMap { line -> Int? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
            return Int(parts[1].trimmingCharacters(in: .whitespaces))
        }.first ?? 0
    }

    /// The newest access token the server issued.
    var currentToken: String? { accessTokens.items.last }

    /// Remembers `secrets` (cookie values the test's server hands out) among those looked for.
    func remember(_ secrets: String...) {
        for secret in secrets { issued.append(secret) }
    }

    /// Every secret so far: the key, the tokens, the refresh tokens, the cookie values.
    var secrets: [String] { [apiKey, staleToken, firstRefreshToken] + issued.items }

    /// The API, recording (or replaying, or whatever `mode` says) into ``recordingFile``; the
    /// jar and the cache are on disk in the folder, shared by every API made here.
    func api(mode: RecordingTransport.Mode = .record, trusting authorities: URL? = nil, pins: [String]? = nil, retries: Int = 2,
             signer: TokenSigner? = nil, configure: (inout APIConfiguration) -> Void = { _ in }) throws -> AbstractAPI {
        try Self.api(url: url, folder: folder, authorities: authorities ?? certificates.authority, pins: try pins ?? [serverPin],
                     apiKey: apiKey, jar: jar, signer: signer ?? self.signer, log: log, mode: mode, retries: retries, configure: configure)
    }

    /// The API every feature on, from plain values (what a child process is given): the server
    /// at `url`, the cache in `folder`'s `cache`, the recording in its `recording`.
    static func api(url: String, folder: URL, authorities: URL, pins: [String], apiKey: String, jar: CookieJar, signer: TokenSigner,
                    log: Recorder<String>, mode: RecordingTransport.Mode = .record, retries: Int = 2,
                    configure: (inout APIConfiguration) -> Void = { _ in }) throws -> AbstractAPI {
        var configuration = APIConfiguration(
            name: "everything", baseURL: url, commonHeaders: ["X-Api-Key": apiKey], timeout: 20, idleTimeout: 3,
            retryPolicy: RetryPolicy(maxRetries: retries, baseDelay: 0.01, jitter: false),
            redirectPolicy: RedirectPolicy(sensitiveHeaders: ["X-Api-Key"]),
            plugins: [LoggerPlugin(level: .response, sink: { log.append($0) })],
            cookies: .shared(jar), certificatePins: try CertificatePins(["127.0.0.1": pins]),
            cache: try HTTPCache(directory: folder.appendingPathComponent("cache")))
        configure(&configuration)
        let upstream = try CurlTransport(trusting: authorities)
        let transport = try RecordingTransport(file: folder.appendingPathComponent("recording/everything.har"), mode: mode, upstream: upstream,
                                               options: RecordingOptions(secrets: ["access_token", "refresh_token"]))
        let api = AbstractAPI(configuration: configuration, transport: transport, responseQueue: .global())
        api.delegate = signer
        return api
    }

    /// The secrets found in the cache's files, the recording and the log: none, when all is well.
    func leakedSecrets() -> [String] {
        var texts = [String]()
        let enumerator = FileManager.default.enumerator(at: cacheDirectory, includingPropertiesForKeys: nil)
        while let file = enumerator?.nextObject() as? URL {
            if let data = try? Data(contentsOf: file) { texts.append("cache \(file.lastPathComponent): " + String(decoding: data, as: UTF8.self)) }
        }
        if let data = try? Data(contentsOf: recordingFile) { texts.append("recording: " + String(decoding: data, as: UTF8.self)) }
        texts.append("log: " + log.items.joined(separator: "\n"))
        return secrets.flatMap { secret in texts.filter { $0.contains(secret) }.map { "\(secret) in \($0.prefix { $0 != ":" })" } }
    }

    /// The names of what is in the test's folder: its own files, and nothing else was written
    /// beside it.
    func filesMade() -> [String] {
        let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
        var names = [String]()
        while let file = enumerator?.nextObject() as? URL { names.append(String(file.path.dropFirst(folder.path.count))) }
        return names.sorted()
    }

    /// A response to send as it is: `status`, `headers` (each ending in CRLF) and `body`, its
    /// length stated unless `length` says otherwise.
    static func response(_ body: String, status: String = "200 OK", headers: String = "", length: Int? = nil) -> String {
        "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(length ?? body.utf8.count)\r\n\(headers)\r\n\(body)"
    }

    /// Answers a request that lacks the newest token with a 401 (the delegate then refreshes):
    /// `true` when it did.
    static func refused(_ request: Request, on connection: RawServer.Connection) -> Bool {
        guard !request.isAuthorized else { return false }
        connection.send(response(#"{"error": "expired"}"#, status: "401 Unauthorized"))
        return true
    }
}

/// Signs each attempt with a bearer token, and refreshes it with `POST /token` on a 401, as the
/// Authentication article's `TokenStore` does.
final class TokenSigner: APIDelegate {
    struct Tokens: Decodable, Sendable {
        let access_token: String
        let refresh_token: String
    }

    private let tokens: Locked<(access: String, refresh: String)>
    /// How many refreshes went through.
    let refreshes = Locked(0)

    init(access: String, refresh: String) {
        tokens = Locked((access, refresh))
    }

    /// The access token it signs with now.
    var currentAccess: String { tokens.withLock { $0.access } }

    func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
        request.setValue("Bearer \(tokens.withLock { $0.access })", forHTTPHeaderField: "Authorization")
    }

    func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
        Promise(in: .global()) { [self] in
            let refreshed: Tokens = try await api.request(
                route: .post("/token"),
                parameters: FormParameters(["grant_type": "refresh_token", "refresh_token": tokens.withLock { $0.refresh }]),
                options: RequestOptions(authenticates: false)).value
            tokens.withLock { $0 = (refreshed.access_token, refreshed.refresh_token) }
            refreshes.withLock { $0 += 1 }
        }
    }
}

/// Counts how many times a promise settled, and with what.
final class Settlements: Sendable {
    private let results = Locked<[String]>([])

    /// Watches `promise`, returning it.
    @discardableResult
    func watch<Value>(_ promise: Promise<Value>) -> Promise<Value> {
        promise.finally { [self] in results.withLock { $0.append("settled") } }
        return promise
    }

    var count: Int { results.withLock { $0.count } }
}
#endif
