#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation
import Testing
import Tern
import TernTesting

/// A recording made in a process short of descriptors: 300 requests at once through a recording
/// transport, each exchange written to the file as it ends, while the requests' sockets take
/// what the process has. Each request settles once with its own answer, and the file holds
/// every exchange. (No time limit: an exit test waits its turn behind the others.)
@Suite(.onTestThreads) struct RecordingDescriptorLimitAttackTests {
    #if os(Linux) && compiler(>=6.3)
    @Test(.exitTest) func threeHundredRequestsAtOnceAreAllRecordedUnderALowDescriptorLimit() async throws {
        let server = try LoopbackServer { request in .text("answer \(request.path)") }
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [url = server.baseURL as String] in
                CrashBacktrace.printOnCrash()
                let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tern-recording-descriptors-\(getpid())")
                defer { try? FileManager.default.removeItem(at: folder) }
                let file = folder.appendingPathComponent("session.har")
                let descriptors = { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.compactMap { Int($0) } ?? [] }
                var limit = rlimit(rlim_cur: rlim_t((descriptors().max() ?? 2) + 40), rlim_max: rlim_t((descriptors().max() ?? 2) + 40))
                guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0,
                      let recording = try? RecordingTransport(file: file, mode: .record, upstream: TestTransport.make()) else { exit(2) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 120, retryPolicy: .never), transport: recording,
                                      responseQueue: .global())
                let results = await withTaskGroup(of: String.self) { group in
                    for index in 0..<300 {
                        group.addTask {
                            do {
                                let answer: String = try await api.request(route: .get(url + "/r/\(index)")).value
                                return answer == "answer /r/\(index)" ? "ok" : "\(index): \(answer)"
                            } catch {
                                return "\(index): \(error is APIError ? "" : "untyped ")\(error)"
                            }
                        }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                let failures = results.filter { $0 != "ok" }
                print(failures.isEmpty ? "all ok" : "\(failures.count) failed, first: \(failures[0])")
                let recorded = ((try? recordedEntries(in: file)) ?? []).compactMap { ($0["request"] as? [String: Any])?["url"] as? String }
                print("recorded \(Set(recorded).count)")
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        #expect(printed.split(separator: "\n").map(String.init) == ["all ok", "recorded 300"], "\(printed)")
    }
    #endif
}
