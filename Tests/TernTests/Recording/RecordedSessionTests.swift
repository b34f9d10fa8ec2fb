import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue 59's "done when": a session recorded against a real local server (a token refresh,
/// pages, an upload, an event stream), the server stopped, and the same session replayed from
/// the file, which holds none of the secrets that went by.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordedSessionTests {
    /// The secrets of one run: new at each, so that none can be in the file by chance.
    struct Secrets: Sendable {
        let expiredToken = "expired-\(UUID().uuidString)"
        let refreshToken = "refresh-\(UUID().uuidString)"
        let apiKey = "key-\(UUID().uuidString)"
        let password = "pw-\(UUID().uuidString)"
    }

    /// Signs with its token and the API key; refreshes with its refresh token.
    final class Session: APIDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private var token: String
        let secrets: Secrets

        init(_ secrets: Secrets) {
            self.secrets = secrets
            token = secrets.expiredToken
        }

        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer \(lock.withLock { token })", forHTTPHeaderField: "Authorization")
        }

        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            let reply: Promise<Grant> = api.request(
                route: .post("/token"),
                parameters: JSONParameters(["grant_type": "refresh_token", "refresh_token": secrets.refreshToken, "password": secrets.password]),
                options: RequestOptions(retryPolicy: .never, authenticates: false))
            return reply.map { [self] grant in lock.withLock { token = grant.accessToken } }
        }
    }

    struct Grant: Decodable, Sendable {
        let accessToken: String
        enum CodingKeys: String, CodingKey { case accessToken = "access_token" }
    }

    struct Me: Decodable, Sendable, Equatable { let name: String }
    struct Received: Decodable, Sendable, Equatable { let bytes: Int }

    /// What the session saw, compared between recording and replay.
    struct Outcome: Equatable {
        var me: Me
        var pages: [[Product]]
        var upload: Received
        var events: [ServerSentEvent]
    }

    /// The session: the same code records and replays.
    func session(_ api: TestAPI, secrets: Secrets) async throws -> Outcome {
        let me: Me = try await api.request(route: api.get(endpoint: "/me")).value
        var pages: [[Product]] = []
        for try await page in api.pages(APIRequest<[Product]>(.get("/products"), parameters: URLParameters(["api_key": secrets.apiKey])), style: .linkHeader) {
            pages.append(page.elements)
        }
        let upload = MultipartParameters(parts: [
            Part(name: "note", value: "a tern"),
            Part(name: "photo", data: Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }), filename: "tern.bin"),
        ])
        let received: Received = try await api.request(route: api.post(endpoint: "/upload"), parameters: upload).value
        var events: [ServerSentEvent] = []
        for try await event in api.stream(route: api.get(endpoint: "/events")).events { events.append(event) }
        return Outcome(me: me, pages: pages, upload: received, events: events)
    }

    @Test func aSessionRecordedAgainstAServerReplaysWithItStoppedAndTheFileHoldsNoSecret() async throws {
        try await recordsAndReplays(mode: .record)
    }

    /// The default mode, `.missing`, with no file yet, records a first run whole, as `.record`
    /// does. The refreshed `/me` was once answered with the 401 recorded a moment before, and
    /// the session failed as refused again after its refresh.
    @Test func recordingWhatIsMissingRecordsAFirstRunWhole() async throws {
        try await recordsAndReplays(mode: .missing)
    }

    /// Records the session against the server in `mode`, then replays it with the server stopped.
    func recordsAndReplays(mode: RecordingTransport.Mode) async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let secrets = Secrets()
        let server = try SessionServer(secrets)
        let baseURL = server.baseURL
        let options = RecordingOptions(secrets: ["api_key", "access_token", "refresh_token", "password"])

        let recorder = try RecordingTransport(file: file, mode: mode, upstream: TestTransport.make(), options: options)
        let recording = try TestAPI(baseURL: baseURL, transport: recorder)
        let recordingSession = Session(secrets)
        recording.delegate = recordingSession
        let recorded = try await session(recording, secrets: secrets)
        let issued = server.issuedTokens
        let sessionCookie = server.cookie
        server.stop()

        #expect(recorded.me == Me(name: "tern"))
        #expect(recorded.pages.map(\.count) == [2, 1])
        #expect(recorded.upload.bytes > 100_000)
        #expect(recorded.events.map(\.data) == ["first", "second", "third"])
        #expect(issued.count == 1, "one refresh")

        let text = try String(contentsOf: file, encoding: .utf8)
        for secret in [secrets.expiredToken, secrets.refreshToken, secrets.apiKey, secrets.password, sessionCookie] + issued {
            #expect(!text.contains(secret), "\(secret) is in the recording")
        }
        #expect(text.contains("[redacted]"))

        let replayer = try RecordingTransport(file: file, mode: .replay, options: options)
        let replaying = try TestAPI(baseURL: baseURL, transport: replayer)
        let replayingSession = Session(Secrets())   // other secrets: the placeholders match them
        replaying.delegate = replayingSession
        let replayed = try await session(replaying, secrets: replayingSession.secrets)
        #expect(replayed == recorded)
    }
}

/// The session's server: `/me` answers 401 until sent the token `/token` issued for the refresh
/// token, `/products` two pages linked, `/upload` the length of what it received, `/events`
/// three events.
final class SessionServer: @unchecked Sendable {
    private let lock = NSLock()
    private var issued: [String] = []
    let cookie = "session-\(UUID().uuidString)"
    private let secrets: RecordedSessionTests.Secrets
    private var server: LoopbackServer!

    init(_ secrets: RecordedSessionTests.Secrets) throws {
        self.secrets = secrets
        server = try LoopbackServer(keepingBodiesUpTo: 1 << 20) { [weak self] request in self?.handle(request) ?? ServerResponse().with(.hangUp) }
    }

    var baseURL: String { server.baseURL }
    var issuedTokens: [String] { lock.withLock { issued } }
    func stop() { server.stop() }

    private func handle(_ request: RecordedRequest) -> ServerResponse {
        switch (request.method, request.path) {
        case ("POST", "/token"):
            guard let body = try? JSONSerialization.jsonObject(with: request.body) as? [String: String],
                  body["refresh_token"] == secrets.refreshToken else { return ServerResponse(status: 400) }
            let token = "access-\(UUID().uuidString)"
            lock.withLock { issued.append(token) }
            return .json(#"{"access_token": "\#(token)", "expires_in": 3600}"#)
        case ("GET", "/me"):
            guard let token = lock.withLock({ issued.last }), request.headers["Authorization"] == "Bearer \(token)" else {
                return .json(#"{"code": 401, "message": "expired"}"#, status: 401)
            }
            var response = ServerResponse.json(#"{"name": "tern"}"#)
            response.headers["Set-Cookie"] = "sid=\(cookie); Path=/; HttpOnly"
            return response
        case ("GET", "/products"):
            guard request.queryItems.contains(where: { $0 == ("api_key", secrets.apiKey) }) else { return ServerResponse(status: 403) }
            if request.queryItems.contains(where: { $0 == ("page", "2") }) {
                return .json(#"[{"name": "gull", "price": 2}]"#)
            }
            var response = ServerResponse.json(#"[{"name": "tern", "price": 3}, {"name": "auk", "price": 4}]"#)
            response.headers["Link"] = "<\(baseURL)/products?page=2&api_key=\(secrets.apiKey)>; rel=\"next\""
            return response
        case ("POST", "/upload"):
            return .json(#"{"bytes": \#(request.bodyLength)}"#)
        case ("GET", "/events"):
            var response = ServerResponse.text("data: first\n\ndata: second\n\nid: 3\ndata: third\n\n")
            response.headers["Content-Type"] = "text/event-stream"
            return response
        default:
            return ServerResponse(status: 404)
        }
    }
}
