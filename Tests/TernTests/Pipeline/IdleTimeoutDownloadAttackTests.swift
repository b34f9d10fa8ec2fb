import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting

/// The idle timeout where it meets downloads to a file, over the test's transport:
/// - a large body that trickles in, a piece every three quarters of the idle timeout (a clock the test moves), goes on to a
///   whole file, fetched once;
/// - a download stalled mid-body is retried from the bytes it wrote (`Range`, `If-Range`), and
///   the file comes whole, each byte fetched once but the one asked again;
/// - a download whose file waits for a descriptor (the process had none) is not given up as
///   idle while it waits, as a request waiting for a connection is not (an exit test, over libcurl).
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct IdleTimeoutDownloadAttackTests {
    typealias Seam = MetricsSeamAttackTests

    static let idle: TimeInterval = 0.3

    /// `count` bytes of a pattern that shows a byte out of place.
    static func body(_ count: Int) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 / 251) })
    }

    /// A directory of its own, removed by `body`'s end.
    static func inDirectory<Outcome>(_ body: (URL) async throws -> Outcome) async throws -> Outcome {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-idle-download-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        return try await body(directory)
    }

    static func files(in directory: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
    }

    static func api(retries: Int, idle: TimeInterval = idle) -> AbstractAPI {
        let policy = retries > 0 ? RetryPolicy(maxRetries: retries, baseDelay: 0.01, jitter: false) : .never
        return AbstractAPI(configuration: APIConfiguration(timeout: 20, idleTimeout: idle, retryPolicy: policy),
                           transport: TestTransport.make(), responseQueue: .global())
    }

    /// The `Range` a request head asks for, if any.
    static func range(of request: String) -> String? {
        request.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("range:") }
            .map { $0.dropFirst("range:".count).trimmingCharacters(in: .whitespaces) }
    }

    /// A server whose first answer in full stalls after `count` bytes of `whole`, silent until the
    /// client hangs up; a request for the rest (`Range: bytes=N-`) gets it, any later one all of it.
    static func stallingServer(_ whole: Data, after count: Int, heads: Recorder<String>) throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                heads.append(request)
                if let range = Self.range(of: request), range.hasPrefix("bytes="), range.hasSuffix("-"),
                   let start = Int(range.dropFirst("bytes=".count).dropLast()), start < whole.count {
                    let head = "HTTP/1.1 206 Partial Content\r\nETag: \"v1\"\r\nContent-Range: bytes \(start)-\(whole.count - 1)/\(whole.count)\r\n"
                        + "Content-Length: \(whole.count - start)\r\n\r\n"
                    guard connection.send(head), connection.send(Array(whole[start...])) else { return }
                    continue
                }
                guard connection.send("HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nContent-Length: \(whole.count)\r\n\r\n") else { return }
                guard heads.items.count == 1 else {
                    guard connection.send(Array(whole)) else { return }
                    continue
                }
                _ = connection.send(Array(whole[..<count]))
                while connection.readHead() != nil {}
                return
            }
        }
    }

    /// 48 KiB in 16 pieces, one every three quarters of the idle timeout (twelve in all), on a
    /// clock the test moves once the piece is in: each piece comes after the watch's third quiet
    /// look, one before its fourth would give the download up. The download goes on, is fetched
    /// once, and its file is whole. On real time, a loaded machine's late delivery (a
    /// thread-sanitized URLSession's, past two seconds) gave it up in CI, three times.
    @Test func aTricklingDownloadIsNotIdle() async throws {
        let idle = 1.0
        let whole = Self.body(48 << 10)
        let piece = 3 << 10
        let count = Seam.Counter()
        let sendNext = DispatchSemaphore(value: 0)
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                _ = count.next()
                guard connection.send("HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nContent-Length: \(whole.count)\r\n\r\n") else { return }
                for start in stride(from: 0, to: whole.count, by: piece) {
                    guard sendNext.wait(timeout: .now() + 60) == .success, connection.send(Array(whole[start..<start + piece])) else { return }
                }
            }
        }
        defer { server.stop() }
        let clock = TestClock()
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, idleTimeout: idle, retryPolicy: RetryPolicy(maxRetries: 1, baseDelay: 0.01, jitter: false)),
                              transport: TestTransport.make(), responseQueue: .global(), clock: clock)
        try await Self.inDirectory { directory in
            let destination = directory.appendingPathComponent("file.bin")
            let received = Locked<Int64>(0)
            let download = api.download(route: .get(server.baseURL + "/file"), to: destination)
                .onProgress(in: .global()) { progress in received.withLock { $0 = max($0, progress.completedBytes) } }
            #expect(await clock.waitForScheduled(2))   // the request's timeout, the idle watch's first look
            for index in 1...(whole.count / piece) {
                sendNext.signal()
                #expect(await eventually(timeout: 30) { received.withLock { $0 } >= Int64(index * piece) })
                clock.advance(by: idle * 3 / 4)
            }
            let file = try await download.value
            #expect(file.resumedBytes == 0)
            #expect(try Data(contentsOf: destination) == whole)
            #expect(count.value == 1)
            #expect(Self.files(in: directory) == ["file.bin"])
        }
    }

    /// The first answer stalls after 40,000 of its 100,000 bytes: given up as idle, the retry
    /// asks for the rest from the last byte held (which it checks), and the file is whole.
    @Test func aDownloadStalledMidBodyResumesFromItsBytesOnce() async throws {
        let whole = Self.body(100_000)
        let heads = Recorder<String>()
        let server = try Self.stallingServer(whole, after: 40_000, heads: heads)
        defer { server.stop() }
        try await Self.inDirectory { directory in
            let destination = directory.appendingPathComponent("file.bin")
            let log = Seam.Log()
            let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, idleTimeout: Self.idle,
                                                                  retryPolicy: RetryPolicy(maxRetries: 1, baseDelay: 0.01, jitter: false),
                                                                  plugins: [log]),
                                  transport: TestTransport.make(), responseQueue: .global())
            let file = try await api.download(route: .get(server.baseURL + "/file"), to: destination).value
            #expect(file.resumedBytes == 39_999)
            #expect(try Data(contentsOf: destination) == whole)
            #expect(heads.items.map(Self.range(of:)) == [nil, "bytes=39999-"])
            #expect(IdleTimeoutTests.isIdle(log.answers.first.flatMap { if case .failure(let error) = $0 { error } else { nil } }),
                    "\(log.answers)")
            #expect(Self.files(in: directory) == ["file.bin"])
            #expect(ResumableDownload.pending(for: destination) == nil)
        }
    }

    /// Without a retry, the stalled download fails as idle, typed, and leaves its bytes to resume
    /// from: resumed, it fetches the rest once and the file is whole.
    @Test func aStalledDownloadWithoutRetryCanBeResumed() async throws {
        let whole = Self.body(100_000)
        let heads = Recorder<String>()
        let server = try Self.stallingServer(whole, after: 60_000, heads: heads)
        defer { server.stop() }
        try await Self.inDirectory { directory in
            let destination = directory.appendingPathComponent("file.bin")
            let api = Self.api(retries: 0)
            let stalled = await api.download(route: .get(server.baseURL + "/file"), to: destination).result
            #expect(IdleTimeoutTests.isIdle(stalled.failure as? APIError), "\(stalled)")
            #expect(!FileManager.default.fileExists(atPath: destination.path))
            let resume = try #require(ResumableDownload.pending(for: destination))
            #expect(resume.offset == 60_000)
            let file = try await api.download(route: .get(server.baseURL + "/file"), to: destination, resumingFrom: resume).value
            #expect(file.resumedBytes == 59_999)
            #expect(try Data(contentsOf: destination) == whole)
            #expect(heads.items.map(Self.range(of:)) == [nil, "bytes=59999-"])
            #expect(Self.files(in: directory) == ["file.bin"])
        }
    }
}

extension Result {
    /// The failure, if it is one.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
