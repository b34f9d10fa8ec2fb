import Foundation
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A loopback server that issues tokens and accepts only the newest: each call to `/token` makes
/// a new one, `t1`, `t2`, …, and every other route answers 401 unless sent with it. It counts
/// refreshes and records which token each request carried. A path under `/slow` is answered 2 s
/// late.
final class AuthServer: @unchecked Sendable {
    enum TokenBehavior {
        case issue
        case fail(status: Int)
        case hangUp
        case delayThenIssue(TimeInterval)
        /// Holds the call until the test signals the semaphore, then issues.
        case waitThenIssue(DispatchSemaphore)
    }

    private let lock = NSLock()
    private var issued = 0
    private var behaviors: [TokenBehavior] = []
    private var tokensSeen: [String] = []
    private var hits: [String: Int] = [:]
    private(set) var server: LoopbackServer!

    init() throws {
        // Weak: a request may come while the server is being let go of; it is then hung up on.
        server = try LoopbackServer { [weak self] request in self?.handle(request) ?? ServerResponse().with(.hangUp) }
    }

    deinit { server.stop() }

    var baseURL: String { server.baseURL }

    /// How `/token` answers its next calls, in order; afterwards it issues.
    func script(_ behaviors: TokenBehavior...) {
        script(contentsOf: behaviors)
    }

    func script(contentsOf behaviors: [TokenBehavior]) {
        locked { self.behaviors = behaviors }
    }

    var refreshCount: Int { locked { hits["/token", default: 0] } }
    var currentToken: String { locked { "t\(issued)" } }
    /// The token each request to a protected route carried, in arrival order.
    var tokens: [String] { locked { tokensSeen } }
    func hits(_ path: String) -> Int { locked { hits[path, default: 0] } }

    private func handle(_ request: RecordedRequest) -> ServerResponse {
        let path = request.path
        let behavior: TokenBehavior? = locked {
            hits[path, default: 0] += 1
            guard path == "/token" else {
                tokensSeen.append(request.headers["Authorization"]?.replacingOccurrences(of: "Bearer ", with: "") ?? "")
                return nil
            }
            return behaviors.isEmpty ? .issue : behaviors.removeFirst()
        }
        if let behavior {
            switch behavior {
            case .issue: return .json(#"{"token": "\#(issue())"}"#)
            case .fail(let status): return .json(#"{"code": \#(status), "message": "no token"}"#, status: status)
            case .hangUp: return ServerResponse().with(.hangUp)
            case .delayThenIssue(let seconds):
                Thread.sleep(forTimeInterval: seconds)
                return .json(#"{"token": "\#(issue())"}"#)
            case .waitThenIssue(let gate):
                gate.wait()
                return .json(#"{"token": "\#(issue())"}"#)
            }
        }
        // Judged as it came, answered late: its refusal comes after what was sent since.
        let authorized = locked { issued > 0 && request.headers["Authorization"] == "Bearer t\(issued)" }
        if path.hasPrefix("/slow") { Thread.sleep(forTimeInterval: 2) }
        if path.hasPrefix("/always401") || !authorized {
            return .json(#"{"code": 401, "message": "expired"}"#, status: 401)
        }
        return .json(#"{"ok": true}"#)
    }

    private func issue() -> String {
        locked {
            issued += 1
            return "t\(issued)"
        }
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }
}

struct TokenReply: Decodable, Sendable { let token: String }
struct OK: Decodable, Sendable { let ok: Bool }

/// The delegate under test: it signs with its current token and refreshes through the same API.
final class SessionStore: APIDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var token: String
    private let tokenURL: String
    private(set) var refreshCalls = 0
    var refreshesProactively = false

    init(_ server: AuthServer, token: String = "t0", tokenURL: String? = nil) {
        self.token = token
        self.tokenURL = tokenURL ?? server.baseURL + "/token"
    }

    var currentToken: String {
        lock.lock()
        defer { lock.unlock() }
        return token
    }

    func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
        request.setValue("Bearer \(currentToken)", forHTTPHeaderField: "Authorization")
    }

    func api(_ api: AbstractAPI, needsRefreshBeforeSending request: URLRequest) -> Bool {
        refreshesProactively && currentToken == "t0"
    }

    func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
        lock.lock()
        refreshCalls += 1
        lock.unlock()
        let reply: Promise<TokenReply> = api.request(
            route: .post(tokenURL),
            options: RequestOptions(retryPolicy: .never, authenticates: false)
        )
        return reply.map { [self] reply in
            lock.lock()
            token = reply.token
            lock.unlock()
        }
    }
}

final class AuthAPI: AbstractAPI, BaseAPI, @unchecked Sendable {
    let baseURL: String

    init(_ server: AuthServer, configuration: APIConfiguration = APIConfiguration(retryPolicy: .never), clock: (any APIClock)? = nil) {
        baseURL = server.baseURL
        super.init(configuration: configuration, transport: TestTransport.make(), responseQueue: .global(), clock: clock)
    }

    func secure(_ id: Int = 0) -> Promise<OK> { request(route: get(endpoint: "/secure/\(id)")) }
}
