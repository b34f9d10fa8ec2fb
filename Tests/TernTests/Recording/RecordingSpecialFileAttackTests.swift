#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import Tern
import TernTesting

/// A recording's path that names no regular file: a device (`/dev/null`, given by a CI job as
/// "keep nothing", in a container that runs as root), or a pipe (a fixture named by a shell's
/// process substitution, or swapped for one). The transport is refused at once, typed, naming
/// the file; nothing hangs, and what is at the path stays as it was: a device is never replaced
/// by a regular file of answers.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingSpecialFileAttackTests {
    let baseURL = "https://shop.example"

    func stubs() -> StubTransport {
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/**", answers: .json(#"{"name": "tern", "price": 3}"#)))
        return stubs
    }

    /// The kind of file at `path`, a link not followed.
    func kind(_ path: String) -> mode_t {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_mode & S_IFMT : 0
    }

    /// A device node like `/dev/null` (the same device), in a scratch folder of the test's own:
    /// nothing of the machine's is at stake. `nil` where nodes cannot be made (not root).
    func nullDevice(in folder: URL) throws -> URL? {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let node = folder.appendingPathComponent("null")
        // Device 1:3, as `makedev(1, 3)` encodes it (a macro Swift cannot import).
        guard mknod(node.path, S_IFCHR | 0o666, dev_t(1 << 8 | 3)) == 0 else { return nil }
        return node
    }

    @Test(arguments: [RecordingTransport.Mode.record, .missing, .replay])
    func aDeviceIsRefusedAndStaysADevice(mode: RecordingTransport.Mode) async throws {
        let folder = scratchRecording().deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: folder) }
        guard let device = try nullDevice(in: folder) else { return }
        do {
            let transport = try RecordingTransport(file: device, mode: mode, upstream: stubs())
            let api = try TestAPI(baseURL: baseURL, configuration: APIConfiguration(retryPolicy: .never), transport: transport)
            let result = await (api.request(route: api.get(endpoint: "/products/1")) as Promise<Product>).result
            Issue.record("a device was taken for a recording: \(result)")
        } catch {
            #expect("\(error)".contains(device.path), "\(error)")
        }
        #expect(kind(device.path) == S_IFCHR, "the device was replaced")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["null"])
    }

    @Test(arguments: [RecordingTransport.Mode.record, .missing, .replay])
    func aPipeIsRefusedWithoutWaitingForAWriter(mode: RecordingTransport.Mode) async throws {
        let folder = scratchRecording().deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let pipe = folder.appendingPathComponent("session.har")
        try #require(mkfifo(pipe.path, 0o600) == 0)
        let outcome = Recorder<String>()
        let done = DispatchSemaphore(value: 0)
        let transportStubs = stubs()
        Thread.detachNewThread {
            do {
                _ = try RecordingTransport(file: pipe, mode: mode, upstream: transportStubs)
                outcome.append("taken")
            } catch {
                outcome.append("\(error)")
            }
            done.signal()
        }
        if done.wait(timeout: .now() + 5) == .timedOut {
            Issue.record("opening a pipe as a recording waited for a writer")
            // A writer that closes at once: the open returns, and the read meets the end.
            let writer = open(pipe.path, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
            _ = done.wait(timeout: .now() + 10)
        }
        let said = try #require(outcome.items.first)
        #expect(said.contains(pipe.path), "\(said)")
        #expect(kind(pipe.path) == S_IFIFO, "the pipe was replaced")
    }

    /// A pipe put in the recording's place after the transport read it: the next write neither
    /// waits for a writer (taking the file's lock, or reading it) nor replaces the pipe.
    @Test func aPipeSwappedInMidRunIsNeitherWaitedOnNorReplaced() async throws {
        let file = scratchRecording()
        let folder = file.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: folder) }
        let transport = try RecordingTransport(file: file, mode: .record, upstream: stubs())
        let api = try TestAPI(baseURL: baseURL, configuration: APIConfiguration(retryPolicy: .never), transport: transport)
        let first: Product = try await api.request(route: api.get(endpoint: "/products/1")).value
        #expect(first == Product(name: "tern", price: 3))
        #expect(await eventually { ((try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0) > 0 })
        try FileManager.default.removeItem(at: file)
        try #require(mkfifo(file.path, 0o600) == 0)
        let second: Promise<Product> = api.request(route: api.get(endpoint: "/products/2"))
        let settled = await eventually(timeout: 10) { !second.isPending }
        if !settled {
            Issue.record("the write waited for a writer of the pipe")
            // A writer that closes at once: what waits returns.
            let writer = open(file.path, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
        }
        _ = await second.result
        #expect(kind(file.path) == S_IFIFO, "the pipe was replaced")
    }
}
