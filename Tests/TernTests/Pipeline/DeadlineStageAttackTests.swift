import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Tern
import TernTesting

/// The request's deadline reached at every stage: the answer comes just before or just after it
/// while a retry's backoff, a credential refresh, a redirect's next hop, a stream's head, a
/// cache's revalidation or a download's last bytes are under way. Eleven requests a stage, their
/// answers spread from 100 ms before the 1 s deadline to 100 ms after: each settles exactly
/// once, with its value or `.timeout`, and a download leaves its whole file or what a resume
/// needs, never both, never part of the destination.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct DeadlineStageAttackTests: EarlyAnswerAttack {
    static let deadline: TimeInterval = 1
    /// When each request's answer is due, around the deadline.
    static let offsets: [TimeInterval] = (0...10).map { deadline - 0.1 + Double($0) * 0.02 }

    /// A server for each offset, all answering with `handler`: behind one host's connection cap,
    /// some requests would time out waiting for a connection, before their stage.
    static func servers(_ handler: @escaping @Sendable (RecordedRequest) -> ServerResponse) throws -> [LoopbackServer] {
        try offsets.map { _ in try LoopbackServer(handler: handler) }
    }

    /// What `promise` settled with, each time: waits for the first, then a while for a second.
    static func settlements<Value: Sendable>(of promise: Promise<Value>) async -> [Result<Value, any Error>] {
        let results = Recorder<Result<Value, any Error>>()
        promise.onResult(in: .global()) { results.append($0) }
        _ = await eventually(timeout: 30) { !results.items.isEmpty }
        try? await Task.sleep(for: .milliseconds(300))
        return results.items
    }

    /// Whether `results` is once `expected` or once `.timeout` after the deadline, or, when
    /// `retriedStatus` is given, once that status, whose retry could begin only after the deadline.
    static func expectValueOrTimeout<Value: Sendable & Equatable>(_ results: [Result<Value, any Error>], _ expected: Value, _ label: String,
                                                                  retriedStatus: Int? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(results.count == 1, "\(label): settled \(results.count) times", sourceLocation: sourceLocation)
        switch results.first {
        case .success(let value)?: #expect(value == expected, "\(label)", sourceLocation: sourceLocation)
        case .failure(APIError.timeout(let timeout))?: #expect(timeout.interval == deadline, "\(label)", sourceLocation: sourceLocation)
        case .failure(APIError.unacceptableStatus(let failure))? where retriedStatus != nil:
            #expect(failure.statusCode == retriedStatus, "\(label)", sourceLocation: sourceLocation)
        case let other: Issue.record("\(label): \(String(describing: other))", sourceLocation: sourceLocation)
        }
    }

    /// A retry's backoff that ends about at the deadline: the retry is answered at once, or,
    /// when it could begin only after the deadline, the 503 is the answer.
    @Test func anAnswerAfterABackoffEndingAtTheDeadline() async throws {
        let seen = Recorder<String>()
        let server = try LoopbackServer { request in
            seen.append(request.path)
            return seen.items.filter { $0 == request.path }.count == 1 ? .text("busy", status: 503) : .text("ok")
        }
        defer { server.stop() }
        try await AfterTheEndRaceTests.racing(APIConfiguration(timeout: Self.deadline, retryBudget: .unlimited)) { api in
            let promises: [Promise<String>] = Self.offsets.enumerated().map { index, offset in
                api.request(route: .get(server.baseURL + "/r\(index)"),
                            options: RequestOptions(retryPolicy: RetryPolicy(maxRetries: 1, baseDelay: offset, jitter: false)))
            }
            for (index, promise) in promises.enumerated() {
                Self.expectValueOrTimeout(await Self.settlements(of: promise), "ok", "backoff \(Self.offsets[index])", retriedStatus: 503)
            }
        }
    }

    /// A redirect whose second hop answers about at the deadline (on a busy machine the first
    /// hop's 307 can come at the deadline, which over FoundationNetworking once ended the process:
    /// see `RedirectCancelTests`).
    @Test func aRedirectsNextHopAnsweringAtTheDeadline() async throws {
        let servers = try Self.servers { request in
            if request.path.hasPrefix("/first/") {
                return ServerResponse(status: 307, headers: ["Location": "/second/" + request.path.dropFirst("/first/".count)])
            }
            let delay = Double(request.path.split(separator: "/").last ?? "") ?? 0
            return ServerResponse.text("ok").with(.delayed(delay))
        }
        defer { servers.forEach { $0.stop() } }
        try await AfterTheEndRaceTests.racing(APIConfiguration(timeout: Self.deadline, retryPolicy: .never)) { api in
            let promises: [Promise<String>] = zip(Self.offsets, servers).map { offset, server in
                api.request(route: .get(server.baseURL + "/first/\(offset)"))
            }
            for (index, promise) in promises.enumerated() {
                Self.expectValueOrTimeout(await Self.settlements(of: promise), "ok", "redirect \(Self.offsets[index])")
            }
        }
    }

    /// A credential refresh that ends about at the deadline, the request then answered at once.
    @Test(arguments: DeadlineStageAttackTests.offsets) func aRefreshEndingAtTheDeadline(_ offset: TimeInterval) async throws {
        final class Refresher: APIDelegate, @unchecked Sendable {
            func api(_ api: AbstractAPI, willSend request: inout URLRequest) {}
            let offset: TimeInterval
            let refreshed = Recorder<Bool>()
            init(offset: TimeInterval) { self.offset = offset }
            func api(_ api: AbstractAPI, needsRefreshBeforeSending request: URLRequest) -> Bool { refreshed.items.isEmpty }
            func refreshCredentials(for api: AbstractAPI) -> Promise<Void> {
                let (promise, resolver) = Promise<Void>.pending(in: .global())
                DispatchQueue.global().asyncAfter(deadline: .now() + offset) { [self] in
                    refreshed.append(true)
                    resolver.fulfill(())
                }
                return promise
            }
        }
        let server = try LoopbackServer { _ in .text("ok") }
        defer { server.stop() }
        try await AfterTheEndRaceTests.racing(APIConfiguration(timeout: Self.deadline, retryPolicy: .never), delegate: Refresher(offset: offset)) { api in
            Self.expectValueOrTimeout(await Self.settlements(of: api.request(route: .get(server.baseURL + "/signed"))), "ok", "refresh \(offset)")
        }
    }

    /// A stream whose head comes about at the deadline: its lines, or `.timeout`, once. With a
    /// plugin, the head is judged on the pipeline's queue, not the transport's thread; plugins
    /// hear one end for each stream that opened.
    @Test(arguments: [false, true]) func aStreamsHeadAtTheDeadline(judgedOnThePipeline: Bool) async throws {
        let watching = Watching()
        let servers = try Self.servers { request in
            let delay = Double(request.path.dropFirst()) ?? 0
            return ServerResponse.text("a\nb\n").with(.delayed(delay))
        }
        defer { servers.forEach { $0.stop() } }
        let configuration = APIConfiguration(timeout: Self.deadline, retryPolicy: .never, plugins: judgedOnThePipeline ? [watching] : [])
        try await AfterTheEndRaceTests.racing(configuration) { api in
            let readers = zip(Self.offsets, servers).map { offset, server in
                let stream = api.stream(route: .get(server.baseURL + "/\(offset)"))
                return Task.onTestThreads { () async -> Result<[String], any Error> in
                    do {
                        return .success(try await stream.lines.reduce(into: []) { $0.append($1) })
                    } catch {
                        return .failure(error)
                    }
                }
            }
            for (index, reader) in readers.enumerated() {
                let ended = try await Self.within(30) { await reader.value }
                Self.expectValueOrTimeout(ended.map { [$0] } ?? [], ["a", "b"], "stream \(Self.offsets[index])")
            }
            await Self.expectStreamEndsMatchHeads(configuration)
        }
    }

    /// A cached answer whose revalidation (a 304, or a new 200) comes about at the deadline:
    /// the cached or new body, or `.timeout`, once; and the cache still answers afterwards.
    @Test(arguments: [304, 200]) func aCachedAnswerRevalidatedAtTheDeadline(status: Int) async throws {
        let servers = try Self.servers { request in
            let parts = request.path.split(separator: "/")
            let delay = parts.count > 1 ? Double(parts[1]) ?? 0 : 0
            if request.headers["If-None-Match"] == "\"c1\"" {
                if status == 304 {
                    return ServerResponse(status: 304, headers: ["ETag": "\"c1\"", "Cache-Control": "no-cache"]).with(.delayed(delay))
                }
                return ServerResponse(headers: ["ETag": "\"c2\"", "Cache-Control": "no-cache"], body: Data("fresh".utf8)).with(.delayed(delay))
            }
            return ServerResponse(headers: ["ETag": "\"c1\"", "Cache-Control": "no-cache"], body: Data("cached".utf8))
        }
        defer { servers.forEach { $0.stop() } }
        try await AfterTheEndRaceTests.racing(APIConfiguration(timeout: Self.deadline, retryPolicy: .never, cache: HTTPCache())) { api in
            // Each URL cached first, then revalidated slowly.
            for (offset, server) in zip(Self.offsets, servers) {
                // Time enough however busy the machine: only the revalidation races the deadline.
                let first: String? = await Self.value(of: api.request(route: .get(server.baseURL + "/o/\(offset)"), options: RequestOptions(timeout: 30)))
                #expect(first == "cached")
            }
            let promises: [Promise<String>] = zip(Self.offsets, servers).map { offset, server in
                api.request(route: .get(server.baseURL + "/o/\(offset)"))
            }
            for (index, promise) in promises.enumerated() {
                Self.expectValueOrTimeout(await Self.settlements(of: promise), status == 304 ? "cached" : "fresh", "revalidated \(Self.offsets[index])")
            }
        }
    }

    /// A download whose last bytes come about at the deadline, as its file is moved into place.
    @Test func aDownloadsLastBytesAtTheDeadline() async throws {
        let size = 200_000
        let body = patterned(bytes: size, seed: 7)
        // A server for each download: queued behind the per-host connection cap, some would time
        // out before their head.
        let servers = try Self.offsets.map { _ in try RawServer { connection in
            guard let head = connection.readHead() else { return }
            let delay = Int(head.split(separator: " ")[1].dropFirst()) ?? 0
            // A resume, asked for the rest of the same file: at once.
            if let range = head.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("range: bytes=") }),
               let start = Int(range.dropFirst("range: bytes=".count).split(separator: "-").first ?? ""), start < size,
               head.contains("If-Range: \"d1\"") {
                connection.send("HTTP/1.1 206 Partial Content\r\nETag: \"d1\"\r\nContent-Range: bytes \(start)-\(size - 1)/\(size)\r\n"
                                + "Content-Length: \(size - start)\r\n\r\n")
                connection.send([UInt8](body[start...]))
                _ = connection.readAvailable(for: 1)
                return
            }
            guard connection.send("HTTP/1.1 200 OK\r\nETag: \"d1\"\r\nAccept-Ranges: bytes\r\nContent-Length: \(size)\r\n\r\n"),
                  connection.send([UInt8](body.prefix(size - 1_000))) else { return }
            connection.pause(delay)
            connection.send([UInt8](body.suffix(1_000)))
            _ = connection.readAvailable(for: 1)
        } }
        defer { servers.forEach { $0.stop() } }
        try await AfterTheEndRaceTests.racing(APIConfiguration(timeout: Self.deadline, retryPolicy: .never)) { api in
            try await Self.inDirectory { root in
                var rounds: [(URL, URL, Promise<DownloadedFile>)] = []
                for (offset, server) in zip(Self.offsets, servers) {
                    let directory = root.appendingPathComponent("\(offset)")
                    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
                    let destination = directory.appendingPathComponent("file.bin")
                    rounds.append((directory, destination, api.download(route: .get(server.baseURL + "/\(Int(offset * 1000))"), to: destination)))
                }
                var outcomes: [String: Int] = [:]
                for (directory, destination, promise) in rounds {
                    let results = await Self.settlements(of: promise)
                    let label = directory.lastPathComponent
                    #expect(results.count == 1, "\(label): settled \(results.count) times")
                    let files = Set((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
                    let kept = ResumableDownload.pending(for: destination).map { $0.offset == Int64(size) ? "all" : "part" } ?? "nothing"
                    switch results.first {
                    case .success(let file)?:
                        #expect(file.resumedBytes == 0)
                        #expect(files == ["file.bin"], "\(label): \(files)")
                        #expect(FileManager.default.contents(atPath: destination.path) == body, "\(label)")
                        outcomes["delivered", default: 0] += 1
                    case .failure(APIError.timeout)?:
                        outcomes["timed out, kept \(kept)", default: 0] += 1
                        #expect(!files.contains("file.bin"), "\(label): timed out, but the file is there: \(files)")
                        if let pending = ResumableDownload.pending(for: destination) {
                            #expect(files.count == 2 && files.contains(".file.bin.tern-resume"), "\(label): \(files)")
                            #expect(FileManager.default.contents(atPath: pending.partialFile.path) == body.prefix(Int(pending.offset)), "\(label)")
                            // It resumes to the whole file (at once, or from the start when all of it was kept).
                            let resumed = await Self.settlements(of: api.download(route: .get(pending.url.absoluteString), to: destination, resumingFrom: pending,
                                                                                  options: RequestOptions(timeout: 30)))
                            #expect(resumed.count == 1, "\(label): the resume settled \(resumed.count) times")
                            if case .success? = resumed.first {
                                #expect(FileManager.default.contents(atPath: destination.path) == body, "\(label): resumed")
                                let after = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
                                #expect(after == ["file.bin"], "\(label): after the resume, \(after)")
                            } else if pending.offset < Int64(size) {
                                Issue.record("\(label): the resume from \(pending.offset) failed: \(String(describing: resumed.first))")
                            }
                        } else {
                            #expect(files.isEmpty, "\(label): \(files)")
                        }
                    case let other:
                        Issue.record("\(label): \(String(describing: other))")
                    }
                }
                // Which ways it went, for whoever reads the log: both are correct.
                print("DeadlineStageAttackTests download: \(outcomes)")
            }
        }
    }
}
