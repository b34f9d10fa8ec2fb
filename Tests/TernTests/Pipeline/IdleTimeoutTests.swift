import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting

/// An attempt that moves no byte for the idle timeout is given up as `URLError.timedOut`, which
/// the retry policy judges; one that trickles is not. Against a raw server that stalls where
/// told, over the test's transport.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct IdleTimeoutTests {
    typealias Seam = MetricsSeamAttackTests

    static let idle: TimeInterval = 0.4
    static let body = "0123456789"

    /// Where the first request's answer stalls; later requests are answered whole at once.
    enum Stall: String, CaseIterable, Sendable {
        /// No byte of an answer.
        case beforeTheHead
        /// The head and 3 of the 10 bytes its length announces.
        case midBody
    }

    /// Counts the requests it reads; stalls the first as `stall` says, holding its connection
    /// open until the client leaves, and answers the rest.
    static func server(stallingFirst stall: Stall?, count: Seam.Counter) throws -> RawServer {
        try RawServer { connection in
            while connection.readRequest() != nil {
                guard count.next() == 1, let stall else {
                    guard connection.send(RawServer.Connection.response(body)) else { return }
                    continue
                }
                if stall == .midBody {
                    _ = connection.send("HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body.prefix(3))
                }
                // Silent until the client hangs up.
                while connection.readHead() != nil {}
                return
            }
        }
    }

    static func api(retries: Int, idle: TimeInterval? = IdleTimeoutTests.idle, plugins: [any Plugin] = []) -> AbstractAPI {
        let policy = retries > 0 ? RetryPolicy(maxRetries: retries, baseDelay: 0.01) : .never
        return AbstractAPI(configuration: APIConfiguration(timeout: 20, idleTimeout: idle, retryPolicy: policy, plugins: plugins),
                           transport: TestTransport.make(), responseQueue: .global())
    }

    /// Whether `error` is the failure of an attempt given up as idle.
    static func isIdle(_ error: APIError?) -> Bool {
        guard case .transportFailed(let failure)? = error else { return false }
        return (failure.underlying as? URLError)?.code == .timedOut
    }

    @Test(arguments: Stall.allCases)
    func aStalledAttemptIsRetriedAndTheNextAnswers(stall: Stall) async throws {
        let count = Seam.Counter()
        let server = try Self.server(stallingFirst: stall, count: count)
        defer { server.stop() }
        let log = Seam.Log()
        let data: Data = try await Self.api(retries: 1, plugins: [log]).request(route: .get(server.baseURL + "/data")).value
        #expect(String(decoding: data, as: UTF8.self) == Self.body)
        #expect(count.value == 2)
        #expect(log.answers.count == 2)
        #expect(Self.isIdle(log.answers.first.flatMap { if case .failure(let error) = $0 { error } else { nil } }), "\(log.answers)")
    }

    /// A POST is not retried by default: it fails as the transport's timeout, typed, after the
    /// one exchange.
    @Test(arguments: Stall.allCases)
    func aStalledPostFailsTimedOut(stall: Stall) async throws {
        let count = Seam.Counter()
        let server = try Self.server(stallingFirst: stall, count: count)
        defer { server.stop() }
        let result: Result<Data, any Error> = await Self.api(retries: 2).request(route: .post(server.baseURL + "/data")).result
        #expect(Self.isIdle(result.error as? APIError), "\(result)")
        #expect(result.error.map { "\($0)".contains("its idle timeout") } == true, "\(result)")
        #expect(count.value == 1)
    }

    /// A body that comes a byte at a time, each a quarter of the idle timeout after the last (a
    /// margin for a loaded machine), takes two and a half of them in all: it is not given up,
    /// nor sent twice. An idle timeout of 3 s, bytes 750 ms apart: with the suite's 0.4 s and
    /// 100 ms, then with 1.5 s and 375 ms, a loaded full run over URLSession gave a byte up and
    /// sent the request twice (FoundationNetworking's delegate calls came late). Under the thread
    /// sanitizer, in a full run over URLSession, no byte was heard for 3 s: there the timeout is
    /// 6 s, still less than the body takes.
    @Test func aTricklingBodyIsNotIdle() async throws {
        let count = Seam.Counter()
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                _ = count.next()
                guard connection.send("HTTP/1.1 200 OK\r\nContent-Length: \(Self.body.utf8.count)\r\n\r\n") else { return }
                for byte in Self.body.utf8 {
                    connection.pause(750)
                    guard connection.send([byte]) else { return }
                }
            }
        }
        defer { server.stop() }
        let data: Data = try await Self.api(retries: 1, idle: isThreadSanitized ? 6 : 3).request(route: .get(server.baseURL + "/data")).value
        #expect(String(decoding: data, as: UTF8.self) == Self.body)
        #expect(count.value == 1)
    }

    /// A request body that comes slowly from its stream, over several idle timeouts, moves: the
    /// bytes sent count, and it is sent once.
    @Test func aSlowUploadIsNotIdle() async throws {
        let piece = 8_192, pieces = 24
        let count = Seam.Counter()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                _ = count.next()
                guard connection.send(RawServer.Connection.response("\(request.utf8.count)")) else { return }
            }
        }
        defer { server.stop() }
        let upload = BodyParameters(length: Int64(piece * pieces)) { SlowStream(pieces: pieces, of: piece, every: 50) }
        // Pieces 50 ms apart against a timeout of 1.5 s: a loaded run (a clean-clone CI, over
        // URLSession) once held a piece past the suite's 0.4 s, and the upload went twice.
        let data: Data = try await Self.api(retries: 1, idle: 1.5).request(route: .put(server.baseURL + "/data"), parameters: upload).value
        #expect(Int(String(decoding: data, as: UTF8.self)) ?? 0 > piece * pieces)
        #expect(count.value == 1)
    }

    /// A body stream that gives `pieces` pieces of `size` bytes, `milliseconds` apart.
    final class SlowStream: InputStream {
        private var left: Int
        private let size: Int
        private let milliseconds: Int

        init(pieces: Int, of size: Int, every milliseconds: Int) {
            (left, self.size, self.milliseconds) = (pieces, size, milliseconds)
            super.init(data: Data())
        }

        override func open() {}
        override func close() {}
        override var streamStatus: Stream.Status { left == 0 ? .atEnd : .open }
        override var hasBytesAvailable: Bool { left > 0 }

        override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
            guard left > 0 else { return 0 }
            usleep(useconds_t(milliseconds * 1000))
            left -= 1
            let count = min(maxLength, size)
            buffer.update(repeating: 7, count: count)
            return count
        }
    }

    /// A stream, once its head opened it, is bound by its own idle timeout, not the attempt's:
    /// a silence of several attempt idle timeouts between two lines ends nothing.
    @Test func anOpenStreamOutlivesTheIdleTimeout() async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil,
                  connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n\r\nfirst\n") else { return }
            connection.pause(Int(Self.idle * 3_000))
            _ = connection.send("second\n")
        }
        defer { server.stop() }
        var lines: [String] = []
        for try await line in Self.api(retries: 1).stream(route: .get(server.baseURL + "/lines")).lines { lines.append(line) }
        #expect(lines == ["first", "second"])
    }

    /// A request's own idle timeout wins over the API's none; one that is not positive is refused
    /// before anything is sent.
    @Test func aRequestsOwnIdleTimeout() async throws {
        let count = Seam.Counter()
        let server = try Self.server(stallingFirst: .beforeTheHead, count: count)
        defer { server.stop() }
        let api = Self.api(retries: 0, idle: nil)
        let stalled: Result<Data, any Error> = await api.request(route: .get(server.baseURL + "/data"),
                                                                  options: RequestOptions(idleTimeout: Self.idle)).result
        #expect(Self.isIdle(stalled.error as? APIError), "\(stalled)")
        for refused in [0, -1, .nan] as [TimeInterval] {
            let result: Result<Data, any Error> = await api.request(route: .get(server.baseURL + "/data"),
                                                                     options: RequestOptions(idleTimeout: refused)).result
            guard case .invalidRequest(let failure)? = result.error as? APIError, case .invalidTimeout = failure.reason else {
                Issue.record("\(refused): \(result)")
                continue
            }
        }
        #expect(count.value == 1)
    }
}

extension Result {
    /// The failure, if it is one.
    fileprivate var error: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
