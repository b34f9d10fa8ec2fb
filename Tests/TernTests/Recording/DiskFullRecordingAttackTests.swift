#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Foundation
import Testing
@testable import Tern
@testable import TernTesting

/// A recording (``RecordingTransport``, `record`) whose file the disk will not let grow: in a
/// child process whose files may grow no larger than 256 KiB (``DiskFullDownloadAttackTests``).
/// - An exchange whose entry cannot be written fails, as the recorder's API says, with a typed
///   `transportFailed`, once, and its entry is dropped: the exchanges after it that fit are
///   written (kept, it failed every exchange after it until the limit was lifted). One short of
///   a descriptor is written with the next (``DescriptorPersistenceAttackTests``).
/// - The file stays byte for byte as last written whole, with nothing half-written beside it.
@Suite(.onTestThreads) struct DiskFullRecordingAttackTests {
    #if os(Linux) && compiler(>=6.3)
    @Test(.exitTest) func aRecordingTheDiskWillNotLetGrowKeepsItsLastGoodFile() async throws {
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                let path = request.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
                guard connection.send(RawServer.Connection.response(DiskFullCacheAttackTests.body(path))) else { return }
            }
        }
        defer { server.stop() }
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [base = server.baseURL as String] in
                CrashBacktrace.printOnCrash()
                let manager = FileManager.default
                let folder = manager.temporaryDirectory.appendingPathComponent("tern-disk-full-recording-\(getpid())")
                let file = folder.appendingPathComponent("session.har")
                defer { try? manager.removeItem(at: folder) }
                guard (try? manager.createDirectory(at: folder, withIntermediateDirectories: true)) != nil,
                      DiskFullDownloadAttackTests.limitFiles(to: DiskFullDownloadAttackTests.limit), let upstream = TestTransport.make(),
                      let recording = try? RecordingTransport(file: file, mode: .record, upstream: upstream) else { exit(2) }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: .never), transport: recording,
                                      responseQueue: .global())
                var written = Data()
                for (index, path) in ["/r/1000", "/r/300000", "/r/2000", "/r/3000"].enumerated() {
                    if index == 3 { guard DiskFullDownloadAttackTests.limitFiles(to: nil) else { exit(2) } }
                    let promise: Promise<String> = api.request(route: .get(base + path))
                    let outcome = await DescriptorCacheAttackTests.outcome(promise, expected: DiskFullCacheAttackTests.body(path))
                    let now = (try? Data(contentsOf: file)) ?? Data()
                    let log = ((try? JSONSerialization.jsonObject(with: now)) as? [String: Any])?["log"] as? [String: Any]
                    let entries = (log?["entries"] as? [[String: Any]] ?? []).map { entry -> String in
                        let url = (entry["request"] as? [String: Any])?["url"] as? String ?? "?"
                        let text = ((entry["response"] as? [String: Any])?["content"] as? [String: Any])?["text"] as? String ?? "?"
                        let path = String(url.dropFirst(base.count))
                        return text == DiskFullCacheAttackTests.body(path) ? path : "\(path) wrong"
                    }
                    print("\(path): \(outcome), file \(entries), \(now == written ? "unchanged" : "changed"), "
                          + "beside \(DiskFullDownloadAttackTests.listing(folder))")
                    written = now
                }
                withExtendedLifetime(api) {}
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map(String.init)
        let beside = "beside [\"session.har\"]"
        #expect(lines == [
            "/r/1000: ok, file [\"/r/1000\"], changed, \(beside)",
            "/r/300000: typed transportFailed, file [\"/r/1000\"], unchanged, \(beside)",
            "/r/2000: ok, file [\"/r/1000\", \"/r/2000\"], changed, \(beside)",
            "/r/3000: ok, file [\"/r/1000\", \"/r/2000\", \"/r/3000\"], changed, \(beside)",
        ], "\(printed)")
    }
    #endif
}
