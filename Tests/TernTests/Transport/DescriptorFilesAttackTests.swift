#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation
import Testing
import Tern
import TernTesting

/// Requests whose bodies are files, many at once in a process allowed 48 or 24 spare
/// descriptors (16 of them Tern's reserve, which its sockets leave to the rest): 60 downloads,
/// each written to a file of its own, 30 uploads of a file, and 30 multipart uploads with a file
/// part, to six servers (in the parent, not under the limit) that send each download's body in
/// two halves a moment apart, and say whether each upload arrived whole.
/// - Each settles once: with its whole body (a downloaded file as the server sent it; an upload
///   the server found whole), or a typed error, never a wrong body. Over libcurl, whose requests
///   wait for a socket, and for a file of their own (``OwnFiles``), while others run, every one
///   succeeds, and the process never finds every descriptor taken: Tern's files leave the last
///   eight to the rest. Over URLSession, whose sockets keep no reserve, Dispatch stopping the
///   process for want of a descriptor is a known issue.
/// - Nothing is left at a failed download's destination, nor any partial file beside it.
/// - The process holds no more files open after than before (idle connections apart).
/// (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads) struct DescriptorFilesAttackTests {
    /// The body of download or upload `index`: about 20 KB of text that names it.
    static func content(_ index: Int) -> String { String(repeating: "file \(index) line\n", count: 1500) }

    /// `GET /d/N`: ``content(_:)`` of N, in two halves 150 ms apart; `POST /u/N`: "whole" if the
    /// body is N's content; `POST /m/N`: "whole" if the multipart body holds N's content and the
    /// caption "caption N"; else what was wrong.
    static func server() throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let path = request.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
                let index = Int(path.split(separator: "/").last ?? "") ?? -1
                let expected = content(index)
                if path.hasPrefix("/d/") {
                    let half = expected.utf8.count / 2
                    let head = "HTTP/1.1 200 OK\r\nContent-Length: \(expected.utf8.count)\r\nContent-Type: text/plain\r\n\r\n"
                    guard connection.send(head + String(expected.utf8.prefix(half))!) else { return }
                    connection.pause(150)
                    guard connection.send(String(expected.utf8.dropFirst(half))!) else { return }
                    continue
                }
                let body = request.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
                let whole = path.hasPrefix("/u/") ? body == expected
                    : body.contains("\r\n\r\n" + expected + "\r\n--") && body.contains("\r\n\r\ncaption \(index)\r\n--")
                let answer = whole ? "whole" : "not whole: \(body.utf8.count) bytes"
                guard connection.send(RawServer.Connection.response(answer)) else { return }
            }
        }
    }

    /// The typed errors requests failed with, in the child.
    static let firstErrors = Recorder<String>()

    /// What a promise settled with (`check`'s word for a value), and how many times it settled.
    static func settledOnce<Value: Sendable>(_ promise: Promise<Value>, _ check: @escaping @Sendable (Value) -> String) async -> String {
        let settled = Recorder<Int>()
        promise.finally { settled.append(1) }
        let result = await promise.result
        // `finally` runs on the promise's queue, which a loaded low-priority child may reach late
        // (a release run once took more than 20 ms): wait for it, then a little for a second one.
        for _ in 0..<1_000 where settled.items.isEmpty { try? await Task.sleep(for: .milliseconds(10)) }
        try? await Task.sleep(for: .milliseconds(20))
        let times = settled.items.count == 1 ? "" : " settled \(settled.items.count) times"
        switch result {
        case .success(let value): return check(value) + times
        case .failure(let error as APIError):
            firstErrors.append("\(error)")
            return "typed \(error.caseName)" + times
        case .failure(let error): return "untyped \(error)" + times
        }
    }

    #if os(Linux) && compiler(>=6.3)
    @Test(.exitTest, arguments: [48, 24])
    func manyFileUploadsAndDownloadsUnderALowLimitArriveWholeOrFailTypedAndLeaveNoFileBehind(spare: Int) async throws {
        let servers = try (0..<6).map { _ in try Self.server() }
        defer { servers.forEach { $0.stop() } }
        let urls = servers.map(\.baseURL).joined(separator: " ")
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [urls = urls as String, spare = spare as Int] in
                CrashBacktrace.printOnCrash()
                let bases = urls.split(separator: " ").map(String.init)
                let manager = FileManager.default
                let root = manager.temporaryDirectory.appendingPathComponent("tern-descriptor-files-\(getpid())")
                defer { try? manager.removeItem(at: root) }
                let sources = root.appendingPathComponent("sources"), downloads = root.appendingPathComponent("downloads")
                guard (try? manager.createDirectory(at: sources, withIntermediateDirectories: true)) != nil,
                      (try? manager.createDirectory(at: downloads, withIntermediateDirectories: true)) != nil else { exit(2) }
                for index in 0..<30 {
                    guard manager.createFile(atPath: sources.appendingPathComponent("\(index).txt").path,
                                             contents: Data(DescriptorFilesAttackTests.content(index).utf8)) else { exit(2) }
                }
                guard DescriptorWaitAttackTests.lowerLimit(spare: spare), let transport = TestTransport.make() else { exit(2) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 60, retryPolicy: .never), transport: transport,
                                      responseQueue: .global())
                let kinds = { () -> (sockets: Int, others: [String]) in
                    let open = (try? manager.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
                    // A file this process got from the parent (one a parallel test had open as the
                    // child was started) and the parent removed meanwhile is named "… (deleted)"
                    // after: the same file, open all along.
                    let links = open.map { (try? manager.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) ?? "" }
                        .map { $0.hasSuffix(" (deleted)") ? String($0.dropLast(" (deleted)".count)) : $0 }
                    return (links.count { $0.hasPrefix("socket:") }, links.filter { !$0.hasPrefix("socket:") }.sorted())
                }
                func run(_ kind: Character, _ index: Int) async -> String {
                    let base = bases[index % bases.count]
                    let source = sources.appendingPathComponent("\(index % 30).txt")
                    switch kind {
                    case "d":
                        let destination = downloads.appendingPathComponent("d\(index)")
                        let promise = api.download(route: .get(base + "/d/\(index)"), to: destination)
                        // Its bytes are read after, once descriptors are free again.
                        return await DescriptorFilesAttackTests.settledOnce(promise) { $0.fileURL == destination ? "ok" : "wrong file \(index)" }
                    case "u":
                        let promise: Promise<String> = api.request(route: .post(base + "/u/\(index % 30)"), parameters: BodyParameters(source))
                        return await DescriptorFilesAttackTests.settledOnce(promise) { $0 == "whole" ? "ok" : "upload \(index): \($0)" }
                    default:
                        let parts = MultipartParameters(parts: [Part(name: "caption", value: "caption \(index % 30)"), Part(name: "file", fileURL: source)])
                        let promise: Promise<String> = api.request(route: .post(base + "/m/\(index % 30)"), parameters: parts)
                        return await DescriptorFilesAttackTests.settledOnce(promise) { $0 == "whole" ? "ok" : "multipart \(index): \($0)" }
                    }
                }
                // Once of each first: what the transport opens once is open by then.
                let warm = [await run("d", 1000), await run("u", 0), await run("m", 0)]
                try? manager.removeItem(at: downloads.appendingPathComponent("d1000"))
                guard warm == ["ok", "ok", "ok"] else { print("warm: \(warm)"); exit(3) }
                try? await Task.sleep(for: .milliseconds(300))
                let before = kinds()
                let sampler = DescriptorSampler()
                let jobs: [(Character, Int)] = (0..<60).map { ("d", $0) } + (0..<30).map { ("u", $0) } + (0..<30).map { ("m", $0) }
                let results = await withTaskGroup(of: (String, String).self) { group in
                    for (kind, index) in jobs { group.addTask { ("\(kind)\(index)", await run(kind, index)) } }
                    return await group.reduce(into: [String: String]()) { $0[$1.0] = $1.1 }
                }
                for (name, errors) in Dictionary(grouping: DescriptorFilesAttackTests.firstErrors.items, by: { $0.prefix(40) }) {
                    print("first error \(name): \(errors[0])")
                }
                print("no descriptor free \(sampler.stop()) times")
                for kind in ["d", "u", "m"] {
                    let mine = results.filter { $0.key.hasPrefix(kind) }.map(\.value)
                    let typed = Dictionary(grouping: mine.filter { $0.hasPrefix("typed ") }, by: { $0 }).mapValues(\.count)
                    print("\(kind): settled \(mine.count { $0 == "ok" || $0.hasPrefix("typed ") }) of \(mine.count), ok \(mine.count { $0 == "ok" }), typed \(typed), wrong \(mine.filter { $0 != "ok" && !$0.hasPrefix("typed ") }.sorted().prefix(3))")
                }
                // Only the downloads that succeeded are in their directory: no failed one's file, no partial file.
                let left = ((try? manager.contentsOfDirectory(atPath: downloads.path)) ?? []).sorted()
                let delivered = results.filter { $0.key.hasPrefix("d") && $0.value == "ok" }.map(\.key).sorted()
                print("left beside: \(left.filter { !delivered.contains($0) })")
                print("missing: \(delivered.filter { !left.contains($0) })")
                let wrongBytes = delivered.filter { name in
                    (try? String(contentsOf: downloads.appendingPathComponent(name), encoding: .utf8)) != DescriptorFilesAttackTests.content(Int(name.dropFirst()) ?? -1)
                }
                print("wrong bytes: \(wrongBytes)")
                try? await Task.sleep(for: .milliseconds(300))
                let after = kinds()
                print("files opened and left open: \(after.others.filter { !before.others.contains($0) })")
                print("files open before, closed after: \(before.others.filter { !after.others.contains($0) })")
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map(String.init)
        if CrashBacktrace.excusesDispatchStoppingAChildOverURLSession(printed) {
            return
        }
        for (kind, count) in [("d", 60), ("u", 30), ("m", 30)] {
            #expect(lines.contains { $0.hasPrefix("\(kind): settled \(count) of \(count), ") && $0.hasSuffix("wrong []") }, "\(printed)")
        }
        if TestTransport.isCurl {
            // A download whose partial file cannot be opened holds its transfer until it can; an
            // upload whose file cannot be opened runs again once another exchange has ended.
            for (kind, count) in [("d", 60), ("u", 30), ("m", 30)] {
                #expect(lines.contains("\(kind): settled \(count) of \(count), ok \(count), typed [:], wrong []"), "\(printed)")
            }
            #expect(lines.contains("no descriptor free 0 times"), "\(printed)")
        }
        #expect(lines.contains("left beside: []"), "\(printed)")
        #expect(lines.contains("missing: []"), "\(printed)")
        #expect(lines.contains("wrong bytes: []"), "\(printed)")
        #expect(lines.contains("files opened and left open: []"), "\(printed)")
    }
    #endif
}
