#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting

/// A cache on disk in a process short of descriptors, in a child process whose limit is lowered
/// to 48 spare. Ten responses are kept (fresh for ten minutes; their connections closed, so that
/// none is left idle to send a request by), then:
/// - every descriptor below Tern's reserve taken (no socket can be made, a file can): each is
///   answered from its file, whole, the server not asked;
/// - every descriptor taken (no file can be opened either): each settles once, with its answer
///   or a typed error (none reaches the server: no socket can be made), never a wrong body
///   (Dispatch stopping the process meanwhile, for want of a descriptor, is a known issue: the
///   test itself took them all);
/// - descriptors free again: each is answered from its file, whole. Before, a file the cache
///   could not open for want of a descriptor was taken as damaged, counted and removed: every
///   entry was fetched again.
/// (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads) struct DescriptorCacheAttackTests {
    #if os(Linux) && compiler(>=6.3)
    @Test(.exitTest) func aCacheThatCannotOpenItsFilesNeitherAnswersWronglyNorForgetsThem() async throws {
        let asked = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let path = request.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
                asked.append(path)
                let body = "kept \(path) " + String(repeating: "x", count: 2000)
                guard connection.send(RawServer.Connection.response(body, headers: "Cache-Control: max-age=600\r\nConnection: close\r\n")) else { return }
            }
        }
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String] in
                CrashBacktrace.printOnCrash()
                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-descriptor-cache-\(getpid())")
                defer { try? FileManager.default.removeItem(at: directory) }
                guard DescriptorWaitAttackTests.lowerLimit(spare: 48), let transport = TestTransport.make(),
                      let cache = try? HTTPCache(directory: directory) else { exit(2) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: .never, cache: cache), transport: transport,
                                      responseQueue: .global())
                func round() async -> [String] {
                    var outcomes: [String] = []
                    for index in 0..<10 {
                        let path = "/c/\(index)"
                        let promise: Promise<String> = api.request(route: .get(base + path))
                        outcomes.append(await DescriptorCacheAttackTests.outcome(promise, expected: "kept \(path) " + String(repeating: "x", count: 2000)))
                    }
                    return outcomes
                }
                print("filled: \(await round())")
                var taken = DescriptorWaitAttackTests.takeDescriptors(leaving: 0)
                print("no socket: \(await round())")
                // The reserve too: nothing can be opened now.
                while true {
                    let descriptor = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0)
                    guard descriptor >= 0 else { break }
                    taken.append(descriptor)
                }
                let starved = await round()
                taken.forEach { close($0) }
                print("starved: \(Set(starved.map { $0 == "ok" || $0.hasPrefix("typed ") ? "settled" : $0 }))")
                print("after: \(await round())")
                print("dropped: \(cache.corruptEntriesDropped)")
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map(String.init)
        let ok = "[" + Array(repeating: "\"ok\"", count: 10).joined(separator: ", ") + "]"
        // While the test itself holds every descriptor, Dispatch's monitor may need one.
        let starving = lines.prefix(2) == ["filled: \(ok)", "no socket: \(ok)"] && lines.dropFirst(2).first == "crashed, signal 04"
        if CrashBacktrace.excusesDispatchStopping(printed, where: starving, "The test took every descriptor, and Dispatch's monitor stopped the process") {
            return
        }
        #expect(lines == ["filled: \(ok)", "no socket: \(ok)", "starved: [\"settled\"]", "after: \(ok)", "dropped: 0"], "\(printed)")
        // Each asked once: every later answer came from the cache's files.
        #expect(asked.items.sorted() == (0..<10).map { "/c/\($0)" }.sorted(), "\(printed)")
    }
    #endif

    /// What a promise settled with ("ok" for `expected`), and how many times it settled.
    static func outcome(_ promise: Promise<String>, expected: String) async -> String {
        await DescriptorFilesAttackTests.settledOnce(promise) { $0 == expected ? "ok" : "wrong \($0.prefix(40))" }
    }
}
