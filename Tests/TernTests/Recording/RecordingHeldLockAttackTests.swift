#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import Tern
import TernTesting

/// A recording whose file someone else holds locked and never lets go: a test process stopped
/// in the debugger or with Ctrl-Z while it wrote the file, or any program that can open the
/// fixtures (an editor, a sync client) and takes `flock` on what it opens. (Here a descriptor of
/// the test's own, whose `flock` excludes the recorder's as another process's would.) The
/// recorder takes the lock on the file around each write (`RecordingFile.FileLock`). It waited for
/// it without end, holding the exchange: the request settled only by its timeout (never with
/// `.infinity`), and every exchange after it (a second request, here) waited behind it and timed
/// out too. Now an exchange settles after five seconds unwritten, those after it do not wait,
/// and a retry writes them once the lock is free (or without it after thirty seconds), as the
/// cookie jar's writes do under its folder's lock (`LockWait`). RecordingAndReplaying.md:
/// `.record` "writes the file anew, after each exchange, so it is on disk when the request's
/// promise settles"; a promise that never settles is no recording.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingHeldLockAttackTests {
    @Test func aLockNeverLetGoDoesNotStopTheRecording() async throws {
        let file = scratchRecording()
        let folder = file.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // An earlier run's recording, locked by someone who never lets go.
        _ = FileManager.default.createFile(atPath: file.path, contents: Data())
        let holder = open(file.path, O_RDONLY)
        try #require(holder >= 0 && flock(holder, LOCK_EX) == 0)
        defer { close(holder) }

        let stubs = StubTransport()
        stubs.add(Stub(.get, "/**", answers: .json(#"{"name": "tern", "price": 3}"#)))
        let api = try TestAPI(baseURL: "https://shop.example", configuration: APIConfiguration(timeout: 10, retryPolicy: .never),
                              transport: RecordingTransport(file: file, mode: .record, upstream: stubs))
        let promise: Promise<Product> = api.request(route: api.get(endpoint: "/first"))
        let settled = Recorder<String>()
        promise.onResult(in: .global()) { result in settled.append("\(result)") }
        // A second request, once the first waits for the lock.
        try await Task.sleep(for: .seconds(1))
        let second: Promise<Product> = api.request(route: api.get(endpoint: "/second"))
        let secondSettled = Recorder<String>()
        second.onResult(in: .global()) { result in secondSettled.append("\(result)") }
        let came = await eventually(timeout: 20) { !settled.items.isEmpty }
        let secondCame = await eventually(timeout: 5) { !secondSettled.items.isEmpty }
        // Let go, and let the recorder finish.
        flock(holder, LOCK_UN)
        _ = await eventually(timeout: 5) { !settled.items.isEmpty }
        #expect(came, "the request had not settled 20 s (its timeout 10 s) after it was made")
        #expect(settled.items.first?.hasPrefix("success") == true, "the first: \(settled.items)")
        #expect(secondCame && secondSettled.items.first?.hasPrefix("success") == true, "the second, sent a second later: \(secondSettled.items)")
        // Settled unwritten, both are written once the lock is let go.
        let written = await eventually(timeout: 10) {
            let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
            return text.contains("/first") && text.contains("/second")
        }
        #expect(written, "the file once the lock was let go: \((try? String(contentsOf: file, encoding: .utf8)) ?? "none")")
    }
}
