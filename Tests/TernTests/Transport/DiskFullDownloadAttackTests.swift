#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation
import Testing
@testable import Tern
import TernTesting

/// A disk that refuses a download's bytes: in a child process whose files may grow no larger
/// than 256 KiB (`RLIMIT_FSIZE`, `SIGXFSZ` ignored: a write past it fails with `EFBIG`; pipes
/// and sockets are not limited), a server on 127.0.0.1 sends bodies larger and smaller than that.
/// - A download larger than the limit (3 MiB, written as it comes; 600 KiB, gathered and written
///   at its end; redirected first; over a file of the user's it was asked to replace) settles
///   once with `fileFailed(.writeFailed)` naming its destination, and leaves nothing at or beside
///   it: the user's file is untouched. One not asked to replace a file there fails before it
///   starts, the file untouched. One under the limit arrives whole, bytes exact.
/// - A download resumed (``ResumableDownload``) whose rest crosses the limit fails so too, and
///   keeps for a resume only the bytes really on disk: resumed once the limit is raised, the
///   file arrives whole, bytes exact, nothing else left beside it.
/// - Eighteen at once, of sizes on either side of the limit (and at it, and a byte past it),
///   each settle as their size says, leaving the whole files of those that fit and nothing else.
/// - A stream of server-sent events running meanwhile gets every event, in order.
@Suite(.onTestThreads) struct DiskFullDownloadAttackTests {
    /// The limit a file may grow to in the child.
    static let limit = 256 << 10

    /// The `count` bytes of a body: a pattern that a shifted or cut copy does not match.
    static func body(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
    }

    /// `GET /b/N`: ``body(_:)`` of N, without a validator; `GET /go/N`: a redirect there;
    /// `GET /sse`: 40 events `e0`…`e39`, one every 50 ms, then the end.
    static func server() throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let path = request.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
                let count = Int(path.split(separator: "/").last ?? "") ?? 0
                if path.hasPrefix("/b/") {
                    let head = "HTTP/1.1 200 OK\r\nContent-Length: \(count)\r\nContent-Type: application/octet-stream\r\n\r\n"
                    guard connection.send(head), connection.send(body(count)) else { return }
                } else if path.hasPrefix("/go/") {
                    guard connection.send("HTTP/1.1 302 Found\r\nLocation: /b/\(count)\r\nContent-Length: 0\r\n\r\n") else { return }
                } else {
                    guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n") else { return }
                    for index in 0..<40 {
                        connection.pause(50)
                        guard connection.send("data: e\(index)\n\n") else { return }
                    }
                    return
                }
            }
        }
    }

    #if os(Linux) && compiler(>=6.3)
    /// Lets the process's files grow to `bytes` at most (its soft limit; the hard one stays),
    /// with `SIGXFSZ` ignored, so that a write past it fails with `EFBIG`; `nil` lifts it again
    /// (to the hard limit).
    static func limitFiles(to bytes: Int?) -> Bool {
        signal(SIGXFSZ, SIG_IGN)
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0 else { return false }
        limit.rlim_cur = bytes.map { rlim_t($0) } ?? limit.rlim_max
        return setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0
    }

    /// The files in `folder`, hidden ones too, sorted.
    static func listing(_ folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
    }

    /// What a download settled with, and how many times: "ok" (at `destination`, with
    /// `expected`'s bytes), its file failure's reason and whether it names `destination`, or
    /// another error.
    static func outcome(_ promise: Promise<DownloadedFile>, at destination: URL, expected: [UInt8]?) async -> String {
        let settled = Recorder<Int>()
        promise.finally { settled.append(1) }
        let result = await promise.result
        try? await Task.sleep(for: .milliseconds(20))
        let times = settled.items.count == 1 ? "" : " settled \(settled.items.count) times"
        switch result {
        case .success(let file):
            guard file.fileURL == destination else { return "wrong file \(file.fileURL.path)" + times }
            let bytes = (try? Data(contentsOf: destination)).map { [UInt8]($0) }
            return (bytes == expected ? "ok" : "wrong bytes: \(bytes?.count ?? -1)") + times
        case .failure(APIError.fileFailed(let failure)):
            let named = failure.destination.standardizedFileURL == destination.standardizedFileURL ? "" : " naming \(failure.destination.path)"
            return "fileFailed \(failure.reason)\(named)" + times
        case .failure(let error as APIError):
            return "typed \(error.caseName): \(error)" + times
        case .failure(let error):
            return "untyped \(error)" + times
        }
    }

    /// The data of each event `/sse` sends, read meanwhile, or how the stream failed.
    static func events(of api: AbstractAPI, from base: String) -> Task<[String], Never> {
        Task.onTestThreads {
            var seen: [String] = []
            do {
                for try await event in api.stream(route: .get(base + "/sse")).events { seen.append(event.data) }
            } catch {
                seen.append("failed: \(error)")
            }
            return seen
        }
    }

    @Test(.exitTest) func aDownloadLargerThanTheDiskAllowsFailsOnceAndLeavesNothingBehind() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let cuts = Recorder<Int>()
        let ranged = try RawServer.rangedBody {
            cuts.append(1)
            return (Data(DiskFullDownloadAttackTests.body(600_000)), "\"v1\"", cuts.items.count == 1)
        }
        defer { ranged.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String, rangedBase = ranged.baseURL as String] in
                CrashBacktrace.printOnCrash()
                let manager = FileManager.default
                let folder = manager.temporaryDirectory.appendingPathComponent("tern-disk-full-downloads-\(getpid())")
                let resumed = folder.appendingPathComponent("resumed")
                defer { try? manager.removeItem(at: folder) }
                guard (try? manager.createDirectory(at: resumed, withIntermediateDirectories: true)) != nil,
                      manager.createFile(atPath: folder.appendingPathComponent("mine-replaced").path, contents: Data("mine 1".utf8)),
                      manager.createFile(atPath: folder.appendingPathComponent("mine-kept").path, contents: Data("mine 2".utf8)),
                      Self.limitFiles(to: Self.limit), let transport = TestTransport.make() else { exit(2) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: transport,
                                      responseQueue: .global())
                let events = Self.events(of: api, from: base)
                func download(_ path: String, to name: String, replacing: Bool = false, expected: Int? = nil) async -> String {
                    let destination = folder.appendingPathComponent(name)
                    let promise = api.download(route: .get(base + path), to: destination, replacing: replacing)
                    return "\(name): " + (await Self.outcome(promise, at: destination, expected: expected.map(Self.body)))
                }
                print(await download("/b/3000000", to: "large"))
                print(await download("/b/600000", to: "gathered"))
                print(await download("/go/3000000", to: "redirected"))
                print(await download("/b/600000", to: "mine-replaced", replacing: true))
                print(await download("/b/600000", to: "mine-kept"))
                print(await download("/b/100000", to: "small", expected: 100_000))
                print("left: \(Self.listing(folder))")
                print("mine: \((try? String(contentsOf: folder.appendingPathComponent("mine-replaced"), encoding: .utf8)) ?? "gone"), "
                      + "\((try? String(contentsOf: folder.appendingPathComponent("mine-kept"), encoding: .utf8)) ?? "gone")")

                // Resumed: cut by the server at 40,000 bytes, then resumed over the limit.
                let destination = resumed.appendingPathComponent("file.bin")
                let cut = await api.download(route: .get(rangedBase + "/file"), to: destination).result
                guard case .failure(APIError.transportFailed) = cut, let first = ResumableDownload.pending(for: destination) else {
                    print("not cut: \(cut)")
                    exit(3)
                }
                print("cut at \(first.offset)")
                let over = api.download(route: .get(rangedBase + "/file"), to: destination, resumingFrom: first)
                print("resumed: \(await Self.outcome(over, at: destination, expected: nil))")
                // What is kept for a resume is what is on disk, no more.
                let second = ResumableDownload.pending(for: destination)
                let kept = second.flatMap { try? Data(contentsOf: $0.partialFile) }.map { [UInt8]($0) }
                let prefix = second.map { record in
                    kept.map { $0.prefix(Int(record.offset)).elementsEqual(Self.body(600_000).prefix(Int(record.offset))) } ?? false
                }
                print("kept: \(second.map { "\($0.offset) bytes" } ?? "nothing"), a true prefix: \(prefix ?? true)")
                guard Self.limitFiles(to: nil) else { exit(2) }
                let last = api.download(route: .get(rangedBase + "/file"), to: destination, resumingFrom: second)
                print("once raised: \(await Self.outcome(last, at: destination, expected: Self.body(600_000)))")
                print("left resumed: \(Self.listing(resumed))")
                print("events: \(await events.value)")
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map(String.init)
        let expected = [
            "large: fileFailed writeFailed",
            "gathered: fileFailed writeFailed",
            "redirected: fileFailed writeFailed",
            "mine-replaced: fileFailed writeFailed",
            "mine-kept: fileFailed destinationExists",
            "small: ok",
            "left: [\"mine-kept\", \"mine-replaced\", \"resumed\", \"small\"]",
            "mine: mine 1, mine 2",
            "cut at 40000",
            "resumed: fileFailed writeFailed",
        ]
        #expect(Array(lines.prefix(expected.count)) == expected, "\(printed)")
        let rest = Array(lines.dropFirst(expected.count))
        #expect(rest.count == 4 && rest[0].hasPrefix("kept: ") && rest[0].hasSuffix(", a true prefix: true"), "\(printed)")
        #expect(rest.dropFirst() == ["once raised: ok", "left resumed: [\"file.bin\"]",
                                     "events: [" + (0..<40).map { "\"e\($0)\"" }.joined(separator: ", ") + "]"], "\(printed)")
    }

    @Test(.exitTest) func manyDownloadsAtOnceSettleEachAsItsSizeSays() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String] in
                CrashBacktrace.printOnCrash()
                let manager = FileManager.default
                let folder = manager.temporaryDirectory.appendingPathComponent("tern-disk-full-many-\(getpid())")
                defer { try? manager.removeItem(at: folder) }
                guard (try? manager.createDirectory(at: folder, withIntermediateDirectories: true)) != nil,
                      Self.limitFiles(to: Self.limit), let transport = TestTransport.make() else { exit(2) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never), transport: transport,
                                      responseQueue: .global())
                let events = Self.events(of: api, from: base)
                let sizes = [3_000_000, 600_000, 200_000, 262_144, 262_145, 100_000]
                let results = await withTaskGroup(of: String.self) { group in
                    for index in 0..<18 {
                        let size = sizes[index % sizes.count]
                        group.addTask {
                            let destination = folder.appendingPathComponent("d\(index)-\(size)")
                            let promise = api.download(route: .get(base + "/b/\(size)"), to: destination)
                            return "d\(index)-\(size): " + (await Self.outcome(promise, at: destination, expected: Self.body(size)))
                        }
                    }
                    return await group.reduce(into: [String]()) { $0.append($1) }
                }
                print("results: \(results.sorted())")
                print("left: \(Self.listing(folder))")
                print("events: \(await events.value.count)")
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map(String.init)
        let sizes = [3_000_000, 600_000, 200_000, 262_144, 262_145, 100_000]
        let names = (0..<18).map { "d\($0)-\(sizes[$0 % sizes.count])" }
        // Up to the limit itself, a file is written; a byte past it, refused.
        let fits = names.filter { name in Int(name.split(separator: "-")[1])! <= Self.limit }
        let results = names.map { "\($0): " + (fits.contains($0) ? "ok" : "fileFailed writeFailed") }
        #expect(lines == ["results: \(results.sorted())", "left: \(fits.sorted())", "events: 40"], "\(printed)")
    }
    #endif
}
