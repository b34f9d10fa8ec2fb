#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation
import Testing
import Tern
import TernTesting

/// Features that hold descriptors of their own, all at once, in a process short of them: 2,000
/// requests through one API with a cache on disk and a jar of cookies, a fifth of them downloads
/// to files, a fifth multipart uploads of a file, a fifth streams read line by line, a fifth
/// answers kept on disk, a fifth setting cookies. Each settles once with its own answer, and
/// what they left on disk and open is what they should have.
/// (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads) struct DescriptorLimitFeatureTests {
    #if os(Linux) && compiler(>=6.3)
    /// The server: `/dl/N`, `/up`, `/s/N`, `/c/N` (kept for ten minutes), `/k/N` (sets a
    /// cookie): each answer names its request, and `asked` counts the `/c/` ones.
    static func server(asked: Recorder<Int>) throws -> LoopbackServer {
        try LoopbackServer { request in
            let path = request.path
            if path.hasPrefix("/c/") {
                asked.append(1)
                return ServerResponse(headers: ["Cache-Control": "max-age=600"], body: Data("kept \(path)".utf8))
            }
            if path.hasPrefix("/k/") {
                var response = ServerResponse.text("cookie \(path) \(request.headers["Cookie"] == nil ? "none" : "some")")
                response.repeatedFields = [("Set-Cookie", "k\(path.dropFirst(3))=1; Path=/k; Max-Age=600")]
                return response
            }
            if path.hasPrefix("/s/") { return .text((0..<50).map { "\(path) line \($0)\n" }.joined()) }
            if path == "/up" { return .text("up \(request.bodyLength)") }
            return .text("file \(path)")
        }
    }

    @Test(.exitTest) func twoThousandRequestsOfEveryKindFitUnderALowDescriptorLimit() async throws {
        let asked = Recorder<Int>()
        let server = try Self.server(asked: asked)
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [url = server.baseURL as String] in
                CrashBacktrace.printOnCrash()
                let work = FileManager.default.temporaryDirectory.appendingPathComponent("tern-descriptor-features-\(getpid())")
                let (downloads, cacheDirectory, upload) = (work.appendingPathComponent("downloads"), work.appendingPathComponent("cache"),
                                                           work.appendingPathComponent("upload"))
                try? FileManager.default.createDirectory(at: downloads, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: work) }
                try? Data(repeating: 7, count: 20_000).write(to: upload)
                let descriptors = { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.compactMap { Int($0) } ?? [] }
                var limit = rlimit(rlim_cur: rlim_t((descriptors().max() ?? 2) + 129), rlim_max: rlim_t((descriptors().max() ?? 2) + 129))
                guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, let transport = TestTransport.make(),
                      let cache = try? HTTPCache(directory: cacheDirectory) else { exit(2) }
                let before = descriptors().count
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 120, retryPolicy: .never, cache: cache), transport: transport,
                                      responseQueue: .global())
                func one(_ index: Int) async -> String {
                    do {
                        switch index % 5 {
                        case 0:
                            let file = try await api.download(route: .get(url + "/dl/\(index)"), to: downloads.appendingPathComponent("\(index)")).value
                            return try String(contentsOf: file.fileURL, encoding: .utf8) == "file /dl/\(index)" ? "ok" : "wrong file \(index)"
                        case 1:
                            let parameters = MultipartParameters(parts: [Part(name: "f", fileURL: upload), Part(name: "n", value: "\(index)")])
                            let answer: String = try await api.request(route: .post(url + "/up"), parameters: parameters).value
                            return answer.hasPrefix("up 20") ? "ok" : "upload \(index): \(answer)"
                        case 2:
                            var lines = 0
                            for try await line in api.stream(route: .get(url + "/s/\(index)")).lines where line.hasPrefix("/s/\(index) line") { lines += 1 }
                            return lines == 50 ? "ok" : "stream \(index): \(lines) lines"
                        case 3:
                            let answer: String = try await api.request(route: .get(url + "/c/\(index)")).value
                            return answer == "kept /c/\(index)" ? "ok" : "kept \(index): \(answer)"
                        default:
                            let answer: String = try await api.request(route: .get(url + "/k/\(index)")).value
                            return answer.hasPrefix("cookie /k/\(index) ") ? "ok" : "cookie \(index): \(answer)"
                        }
                    } catch {
                        return "\(index): \(error is APIError ? "" : "untyped ")\(error)"
                    }
                }
                for round in 0..<2 {
                    let results = await withTaskGroup(of: String.self) { group in
                        for index in 0..<2000 where round == 0 || index % 5 == 3 { group.addTask { await one(index) } }
                        return await group.reduce(into: []) { $0.append($1) }
                    }
                    let failures = results.filter { $0 != "ok" }
                    print(failures.isEmpty ? "round \(round) all ok" : "round \(round): \(failures.count) failed, first: \(failures[0])")
                }
                // The downloads, each whole where it should be and nothing else beside them.
                let names = (try? FileManager.default.contentsOfDirectory(atPath: downloads.path)) ?? []
                print("downloads \(names.count), others \(names.filter { Int($0).map { !$0.isMultiple(of: 5) } ?? true }.count)")
                // The cookies: one for each path that set one, up to the jar's cap for a host (50).
                print("cookies \(api.cookieJar?.all.count ?? -1)")
                // What is open once all is done, past what was open before the API: its idle
                // connections at most (a host's 8, say) and the cache's directory.
                try? await Task.sleep(for: .milliseconds(200))
                print("open \(descriptors().count - before)")
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map(String.init)
        #expect(lines.prefix(4) == ["round 0 all ok", "round 1 all ok", "downloads 400, others 0", "cookies 50"], "\(printed)")
        // The kept answers were asked of the server once: the second round came from the disk.
        #expect(asked.items.count == 400)
        let open = lines.last.flatMap { $0.hasPrefix("open ") ? Int($0.dropFirst(5)) : nil }
        #expect(open.map { $0 <= 24 } == true, "\(printed)")
    }
    #endif
}
