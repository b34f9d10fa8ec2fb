#if canImport(FoundationNetworking) && compiler(>=6.3)
import FoundationNetworking
import Foundation
import Testing
import Tern
import TernTesting
@testable import TernTransport

/// Many uploads of files at once over URLSession on Linux, which reads each body of up to 16 MiB
/// into memory before it sends it: where nothing holds the requests back (HTTPS, or a session
/// allowing many connections per host), every body was read at once, a gigabyte for 64 such
/// uploads. The transport now holds at most 64 MiB of them, the rest waiting their turn; one
/// cancelled while it waits settles once, and gives its place up.
@Suite(.onTestThreads, .timeLimit(.minutes(1)),
       .enabled(if: !TestTransport.isCurl, "URLSession's reads"),
       .enabled(if: !isThreadSanitized, "a hundred mebibytes through the sanitizer come near the time limit"))
struct SessionBodyMemoryAttackTests {
    static let size = 16 << 20

    /// How many bodies the server is taking at once (each held `seconds` before it is read), and
    /// the most it took.
    final class Seen: @unchecked Sendable {
        private let lock = NSLock()
        private var storage = (now: 0, peak: 0, heads: 0, released: false)

        func with<T>(_ body: (inout (now: Int, peak: Int, heads: Int, released: Bool)) -> T) -> T {
            lock.lock()
            defer { lock.unlock() }
            return body(&storage)
        }

        var heads: Int { with { $0.heads } }
        var released: Bool { with { $0.released } }
    }

    /// A server that takes each upload's head, waits until it is released (or `seconds` pass),
    /// then reads the body and answers with its length.
    static func server(_ seen: Seen, seconds: Double) throws -> RawServer {
        try RawServer { connection in
            while let head = connection.readHead() {
                let length = head.split(separator: "\r\n").compactMap { line -> Int? in
                    let parts = line.split(separator: ":", maxSplits: 1)
                    return parts.count == 2 && parts[0].lowercased() == "content-length" ? Int(parts[1].trimmingCharacters(in: .whitespaces)) : nil
                }.first ?? -1
                seen.with { $0.heads += 1; $0.now += 1; $0.peak = max($0.peak, $0.now) }
                let deadline = Date().addingTimeInterval(seconds)
                while Date() < deadline, !seen.released { usleep(10_000) }
                let read = length > 0 ? connection.discard(length, within: 20) : 0
                seen.with { $0.now -= 1 }
                guard connection.send(RawServer.Connection.response("\(length) \(read)")) else { return }
            }
        }
    }

    static func api(connectionsPerHost: Int) -> AbstractAPI {
        let configuration = URLSessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = connectionsPerHost
        return AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never),
                           transport: URLSessionTransport(configuration: configuration), responseQueue: .global())
    }

    static func file() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tern-memory-\(UUID().uuidString)")
        try Data(count: size).write(to: url)
        return url
    }

    static func outcome(_ promise: Promise<String>) async -> String {
        await DescriptorWaitAttackTests.outcome(promise, expecting: "\(size) \(size)")
    }

    /// Eight uploads of 16 MiB to a host that allows sixteen connections: four bodies are read,
    /// and sent, at a time.
    @Test func atMostFourBodiesOf16MiBAreHeldAtOnce() async throws {
        let seen = Seen()
        let server = try Self.server(seen, seconds: 20)
        defer { server.stop() }
        let file = try Self.file()
        defer { try? FileManager.default.removeItem(at: file) }
        let api = Self.api(connectionsPerHost: 16)
        let uploads: [Promise<String>] = (0..<8).map { api.request(route: .post(server.baseURL + "/u/\($0)"), parameters: BodyParameters(file)) }
        // Four come; a fifth, had it been read, would come within the second after.
        for _ in 0..<1000 where seen.heads < 4 { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .seconds(1))
        #expect(seen.heads == 4)
        seen.with { $0.released = true }
        var outcomes: [String] = []
        for upload in uploads { outcomes.append(await Self.outcome(upload)) }
        #expect(outcomes == Array(repeating: "ok", count: 8))
        #expect(seen.with { $0.peak } == 4)
    }

    /// Four uploads holding the budget, four more waiting for it and cancelled: each of those
    /// settles once, cancelled, never sent; and the places they held at their host are free,
    /// so that two more go out while the four still hold theirs.
    @Test func uploadsCancelledWhileTheyWaitForRoomSettleOnceAndLeaveTheirPlaces() async throws {
        let seen = Seen()
        let server = try Self.server(seen, seconds: 20)
        defer { server.stop() }
        let file = try Self.file()
        defer { try? FileManager.default.removeItem(at: file) }
        // Room at the host for the four held, the four waiting, and none more.
        let api = Self.api(connectionsPerHost: 8)
        let held: [Promise<String>] = (0..<4).map { api.request(route: .post(server.baseURL + "/held/\($0)"), parameters: BodyParameters(file)) }
        for _ in 0..<500 where seen.heads < 4 { try await Task.sleep(for: .milliseconds(10)) }
        let waiting: [Promise<String>] = (0..<4).map { api.request(route: .post(server.baseURL + "/waiting/\($0)"), parameters: BodyParameters(file)) }
        try await Task.sleep(for: .milliseconds(300))
        waiting.forEach { $0.cancel() }
        var cancelled: [String] = []
        for promise in waiting { cancelled.append(await Self.outcome(promise)) }
        #expect(cancelled == Array(repeating: "typed cancelled", count: 4))
        #expect(seen.with { $0.heads } == 4)
        // Small bodies, held in memory by the caller: they need a place at the host alone.
        let small: [Promise<String>] = (0..<2).map { api.request(route: .post(server.baseURL + "/small/\($0)"), parameters: JSONParameters(["n": "small"])) }
        for _ in 0..<500 where seen.heads < 6 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(seen.with { $0.heads } == 6)
        seen.with { $0.released = true }
        var after: [String] = []
        for promise in held { after.append(await Self.outcome(promise)) }
        #expect(after == Array(repeating: "ok", count: 4))
        for promise in small { _ = await promise.result }
    }

    /// Hears how a transport's exchange ends, each time it is told.
    final class Ends: TransportReceiver {
        let ends = Recorder<String>()
        func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {}
        func didReceive(_ head: ResponseHead) -> TransferDecision { .proceed }
        func didReceive(_ chunk: Data) -> TransferDecision { .proceed }
        func didComplete(with error: (any Error)?) { ends.append(error.map { "\(($0 as? URLError)?.code ?? .unknown)" } ?? "ok") }
        func didEndEarlierExchange(_ metrics: TransferMetrics?) -> Bool { false }
    }

    /// At the transport: an exchange waiting for room for its body waits as for a connection
    /// (the idle timeout does not count it), and cancelled there, it is told once.
    @Test func anExchangeWaitingForRoomWaitsAsForAConnectionAndEndsOnce() async throws {
        let seen = Seen()
        let server = try Self.server(seen, seconds: 20)
        defer { server.stop() }
        let file = try Self.file()
        defer { try? FileManager.default.removeItem(at: file) }
        let configuration = URLSessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = 16
        let transport = URLSessionTransport(configuration: configuration)
        func upload(_ path: String) -> (any TransportTask, Ends) {
            var request = URLRequest(url: URL(string: server.baseURL + path)!)
            request.httpMethod = "POST"
            let ends = Ends()
            return (transport.send(TransportRequest(urlRequest: request, body: .file(file)), to: ends), ends)
        }
        let held = (0..<4).map { upload("/held/\($0)") }
        for _ in 0..<1000 where seen.heads < 4 { try await Task.sleep(for: .milliseconds(10)) }
        let (waiting, ends) = upload("/waiting")
        var waits = false
        for _ in 0..<500 where !waits {
            waits = (waiting as? any ConnectionWaiting)?.isWaitingForConnection == true
            if !waits { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(waits)
        waiting.cancel()
        try await Task.sleep(for: .milliseconds(300))
        #expect(ends.ends.items == ["\(URLError.Code.cancelled)"])
        seen.with { $0.released = true }
        for (_, ends) in held {
            for _ in 0..<1000 where ends.ends.items.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            #expect(ends.ends.items == ["ok"])
        }
        #expect(seen.heads == 4)
        withExtendedLifetime(held) {}
    }
}
#endif
