import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting

/// The idle timeout where it meets redirects, a credential refresh, retries, the request's own
/// timeout, streams, uploads and a cancel, over the test's transport, against raw servers that
/// stall where told:
/// - a stall on a redirect chain's second stop is given up there, and its retry goes there;
/// - a stall on the retry after a 401 and a refresh is given up, and retried signed anew;
/// - the watch of an attempt that ended never stops the next one, quiet as that starts;
/// - a whole timeout shorter than the idle timeout fails as `.timeout`;
/// - a stream whose head never comes is given up as idle (its own idle timeout is not yet its);
///   one whose head the app's code judges slowly is not: the wait is the app's;
/// - an upload the server stops reading is given up as idle, once;
/// - a cancel as the watch fires settles once, as `.cancelled` (or idle, when not retried).
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct IdleTimeoutSeamAttackTests {
    typealias Seam = MetricsSeamAttackTests

    static let idle: TimeInterval = 0.3

    static func api(retries: Int, timeout: TimeInterval = 20, idle: TimeInterval = IdleTimeoutSeamAttackTests.idle,
                    plugins: [any Plugin] = []) -> AbstractAPI {
        let policy = retries > 0 ? RetryPolicy(maxRetries: retries, baseDelay: 0.01, jitter: false) : .never
        return AbstractAPI(configuration: APIConfiguration(timeout: timeout, idleTimeout: idle, retryPolicy: policy, plugins: plugins),
                           transport: TestTransport.make(), responseQueue: .global())
    }

    /// The path of a request head.
    static func path(of request: String) -> String {
        request.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
    }

    /// The value of `field` in a request head.
    static func field(_ field: String, of request: String) -> String? {
        request.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix(field.lowercased() + ":") }
            .map { $0.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces) }
    }

    /// Holds the connection, silent, until the client hangs up.
    static func stall(_ connection: RawServer.Connection) {
        while connection.readHead() != nil {}
    }

    /// The first failure plugins heard, if any.
    static func firstFailure(_ log: Seam.Log) -> APIError? {
        log.answers.lazy.compactMap { if case .failure(let error) = $0 { error } else { nil } }.first
    }

    @Test(arguments: [0, 1])
    func aStallOnARedirectsSecondStopIsIdle(retries: Int) async throws {
        let heads = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                heads.append(request)
                switch Self.path(of: request) {
                case "/start":
                    guard connection.send("HTTP/1.1 302 Found\r\nLocation: /second\r\nContent-Length: 0\r\n\r\n") else { return }
                default:
                    guard heads.items.filter({ Self.path(of: $0) == "/second" }).count > 1 else { return Self.stall(connection) }
                    guard connection.send(RawServer.Connection.response("arrived")) else { return }
                }
            }
        }
        defer { server.stop() }
        let log = Seam.Log()
        let result: Result<String, any Error> = await Self.api(retries: retries, plugins: [log]).request(route: .get(server.baseURL + "/start")).result
        if retries == 0 {
            #expect(IdleTimeoutTests.isIdle(result.failure as? APIError), "\(result)")
            #expect(heads.items.map(Self.path(of:)) == ["/start", "/second"])
        } else {
            #expect(try result.get() == "arrived")
            #expect(heads.items.map(Self.path(of:)) == ["/start", "/second", "/second"])
            #expect(IdleTimeoutTests.isIdle(Self.firstFailure(log)), "\(log.answers)")
        }
    }

    /// Signs with its token; a refresh asks `/token`, whose body is the next token.
    final class Tokens: APIDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private var token = "t0"
        private(set) var refreshes = 0
        let tokenURL: String

        init(tokenURL: String) { self.tokenURL = tokenURL }

        func api(_ api: AbstractAPI, willSend request: inout URLRequest) throws {
            request.setValue("Bearer \(lock.withLock { token })", forHTTPHeaderField: "Authorization")
        }

        func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
            lock.withLock { refreshes += 1 }
            let reply: Promise<String> = api.request(route: .post(tokenURL), options: RequestOptions(retryPolicy: .never, authenticates: false))
            return reply.map { [self] token in lock.withLock { self.token = token } }
        }
    }

    /// `/secure` with `t0` is a 401; `/token` gives `t1`; the first `/secure` with `t1` stalls.
    /// The retry after the refresh is given up as idle, and retried with `t1` again: one refresh.
    @Test func aStallOnTheRetryAfterARefreshIsIdleAndRetriedSignedAnew() async throws {
        let heads = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                heads.append(request)
                let authorization = Self.field("Authorization", of: request)
                switch (Self.path(of: request), authorization) {
                case ("/token", _):
                    guard connection.send(RawServer.Connection.response("t1")) else { return }
                case ("/secure", "Bearer t1"?):
                    guard heads.items.filter({ Self.field("Authorization", of: $0) == "Bearer t1" }).count > 1 else { return Self.stall(connection) }
                    guard connection.send(RawServer.Connection.response("secret")) else { return }
                default:
                    guard connection.send("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n") else { return }
                }
            }
        }
        defer { server.stop() }
        let log = Seam.Log()
        let api = Self.api(retries: 1, plugins: [log])
        let tokens = Tokens(tokenURL: server.baseURL + "/token")
        api.delegate = tokens
        let secret: String = try await api.request(route: .get(server.baseURL + "/secure")).value
        #expect(secret == "secret")
        #expect(tokens.refreshes == 1)
        #expect(heads.items.map { "\(Self.path(of: $0)) \(Self.field("Authorization", of: $0) ?? "-")" }
                == ["/secure Bearer t0", "/token -", "/secure Bearer t1", "/secure Bearer t1"])
        #expect(log.answers.contains { if case .failure(let error) = $0 { IdleTimeoutTests.isIdle(error) } else { false } }, "\(log.answers)")
    }

    /// Each of the first attempts is quiet for more than half an idle timeout, then answers 503;
    /// the next is quiet as long before its body, which then trickles. The watch of an attempt
    /// that ended had counted most of its quiet looks: it never stops the attempt after it. A
    /// longer idle timeout than the suite's, so that a loaded machine's late wakeups (over
    /// URLSession in CI, a byte 75 ms apart came after more than 0.3 s; under the thread
    /// sanitizer, a quiet of 0.72 s overran a timeout of 1.2 s) fit in its margins, a second each;
    /// the body's bytes come a tenth of the timeout apart (a quarter, 0.625 s, came after more
    /// than 2.5 s over URLSession under the sanitizer).
    @Test func anEndedAttemptsWatchNeverStopsTheNext() async throws {
        let count = Seam.Counter()
        let idle = 2.5
        let quiet = Int(idle * 600)
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                let number = count.next()
                connection.pause(quiet)
                guard number == 3 else {
                    guard connection.send("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n") else { return }
                    continue
                }
                guard connection.send("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n") else { return }
                for byte in "answer".utf8 {
                    connection.pause(Int(idle * 100))
                    guard connection.send([byte]) else { return }
                }
            }
        }
        defer { server.stop() }
        let log = Seam.Log()
        let answer: String = try await Self.api(retries: 2, idle: idle, plugins: [log]).request(route: .get(server.baseURL + "/data")).value
        #expect(answer == "answer")
        #expect(count.value == 3)
        #expect(log.answers.map { (try? $0.get())?.statusCode ?? -1 } == [503, 503, 200], "\(log.answers)")
    }

    /// The whole request's timeout, shorter than the idle timeout, ends it first: `.timeout`,
    /// never retried, one exchange. (A timeout of 1.5 s, not 0.3: in a loaded clean-clone CI run
    /// over URLSession, 0.3 s passed before the connection was made, and the server saw none.)
    @Test func aWholeTimeoutShorterThanTheIdleTimeoutFailsAsTimeout() async throws {
        let count = Seam.Counter()
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                _ = count.next()
                return Self.stall(connection)
            }
        }
        defer { server.stop() }
        let result: Result<Data, any Error> = await Self.api(retries: 2, timeout: 1.5, idle: 6).request(route: .get(server.baseURL + "/data")).result
        guard case .timeout(let timeout)? = result.failure as? APIError else {
            Issue.record("\(result)")
            return
        }
        #expect(timeout.interval == 1.5)
        #expect(count.value == 1)
    }

    /// A stream whose head never comes is an attempt like any: given up as idle (the stream's
    /// own idle timeout, a minute by default, is not yet its), and retried; the retry's lines
    /// come whole.
    @Test(arguments: [0, 1])
    func aStreamWhoseHeadNeverComesIsIdle(retries: Int) async throws {
        let count = Seam.Counter()
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                guard count.next() > 1 else { return Self.stall(connection) }
                guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nfirst\nsecond\n") else { return }
            }
        }
        defer { server.stop() }
        let stream = Self.api(retries: retries).stream(route: .get(server.baseURL + "/lines"))
        var lines: [String] = []
        do {
            for try await line in stream.lines { lines.append(line) }
            #expect(retries == 1)
            #expect(lines == ["first", "second"])
            #expect(count.value == 2)
        } catch {
            #expect(retries == 0)
            #expect(IdleTimeoutTests.isIdle(error as? APIError), "\(error)")
            #expect(lines.isEmpty)
            #expect(count.value == 1)
        }
    }

    /// A stream's head that the app's code judges (a validation that takes three idle timeouts,
    /// on the pipeline's queue) holds the transfer meanwhile: that wait is the app's, not the
    /// server's, and the stream opens and reads to its end, as it would without an idle timeout.
    @Test func aStreamsHeadJudgedSlowlyByTheAppIsNotIdle() async throws {
        let count = Seam.Counter()
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                _ = count.next()
                guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nfirst\n") else { return }
                connection.pause(Int(Self.idle * 4_000))
                guard connection.send("second\n") else { return }
            }
        }
        defer { server.stop() }
        let slow = Validation.custom { response in
            usleep(useconds_t(Self.idle * 3_000_000))
            return (200..<300).contains(response.statusCode)
        }
        let stream = Self.api(retries: 0).stream(route: .get(server.baseURL + "/lines"), options: RequestOptions(validation: slow))
        var lines: [String] = []
        do {
            for try await line in stream.lines { lines.append(line) }
        } catch {
            Issue.record("\(error)")
        }
        #expect(lines == ["first", "second"])
        #expect(count.value == 1)
    }

    /// A multipart upload from a 32 MiB file to a server that reads its head and then stops
    /// reading: once the sockets' buffers are full nothing moves, and the POST fails as idle,
    /// typed, sent once.
    @Test func anUploadTheServerStopsReadingIsIdle() async throws {
        let count = Seam.Counter()
        let server = try RawServer { connection in
            guard connection.readHead() != nil else { return }
            _ = count.next()
            // Reads nothing more; the client's hang-up, or the server's stop, ends it.
            connection.pause(4_000)
        }
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-idle-upload-\(UUID().uuidString)")
        try Data(repeating: 7, count: 32 << 20).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let upload = MultipartParameters(parts: [Part(name: "note", value: "big"), Part(name: "file", fileURL: file)])
        let result: Result<Data, any Error> = await Self.api(retries: 2).request(route: .post(server.baseURL + "/upload"), parameters: upload).result
        #expect(IdleTimeoutTests.isIdle(result.failure as? APIError), "\(result)")
        #expect(count.value == 1)
    }

    /// Twelve requests to a server that never answers, idle-retried, each cancelled around the
    /// moment its first attempt's watch gives it up (from 0.9 to 1.45 idle timeouts): each
    /// settles once, as `.cancelled` when an idle attempt is retried; without retries, as
    /// `.cancelled` or as idle, whichever came first.
    @Test(arguments: [3, 0])
    func aCancelAsTheWatchFiresSettlesOnce(retries: Int) async throws {
        let server = try RawServer { connection in
            while connection.readRequest() != nil { return Self.stall(connection) }
        }
        defer { server.stop() }
        let api = Self.api(retries: retries)
        let outcomes = await withTaskGroup(of: String.self) { group in
            for index in 0..<12 {
                group.addTask {
                    let promise: Promise<Data> = api.request(route: .get(server.baseURL + "/data/\(index)"))
                    let settled = Recorder<Int>()
                    promise.finally { settled.append(1) }
                    try? await Task.sleep(for: .milliseconds(Int(Self.idle * 1000 * (0.9 + 0.05 * Double(index)))))
                    promise.cancel()
                    let result = await promise.result
                    try? await Task.sleep(for: .milliseconds(50))
                    let how = switch result {
                    case .failure(APIError.cancelled): "as meant"
                    case .failure(let error as APIError) where retries == 0 && IdleTimeoutTests.isIdle(error): "as meant"
                    default: "\(result)"
                    }
                    return "\(how) \(settled.items.count)"
                }
            }
            var all: [String] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        #expect(outcomes == Array(repeating: "as meant 1", count: 12), "\(outcomes)")
    }
}

extension Result {
    /// The failure, if it is one.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
