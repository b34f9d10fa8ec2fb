// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
import TernTesting

/// A gibibyte each way through Linux's default transport, and streamed to a slow reader, with
/// memory that stays flat.
///
/// Each transfer runs in a child process of its own (an exit test), server included, at the
/// lowest priority: it measures its own peak resident memory, which in this process would count
/// the other tests' too, and it leaves the cores to the tests beside it, some of which wait for
/// less than a second. (Lowering the priority of a thread of this process instead stalled
/// everything under the thread sanitizer: a thread that rarely runs held the sanitizer's locks.)
///
/// They run over libcurl, the default, without the thread sanitizer: the sanitizer's own memory
/// is no measure of Tern's, and a gigabyte under it held up uploads in other tests for seconds.
@Suite(.onTestThreads, .serialized, .enabled(if: TestTransport.isCurl && !isThreadSanitized))
struct LargeTransferTests {
    static let gibibyte = 1 << 30
    /// How far above its resident memory before the transfer a child may peak: flat means a
    /// bounded buffer, whatever the size. The server's buffers count too, and are as bounded.
    static let allowedGrowth = 32 << 20

    @Test func aGibibyteDownloadKeepsMemoryFlat() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let destination = directory.appendingPathComponent("gibibyte.bin")
        let block = patterned(bytes: 1 << 20, seed: 3)

        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [path = destination.path as String] in
                lowerThisProcesssPriority()
                let before = try residentBytes("VmRSS")
                let block = patterned(bytes: 1 << 20, seed: 3)
                let server = try LoopbackServer { _ in
                    ServerResponse(headers: ["Content-Type": "application/octet-stream"], body: block, behavior: .repeated(times: 1024))
                }
                defer { server.stop() }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 300), responseQueue: .global())
                _ = try await api.download(route: .get(server.baseURL + "/gibibyte"), to: URL(fileURLWithPath: path)).value
                print(try residentBytes("VmHWM") - before)
            }
        }
        #expect(growth(printedBy: child).map { $0 < Self.allowedGrowth } == true, "\(report(of: child))")
        // Whole, and nothing else left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["gibibyte.bin"])
        let handle = try FileHandle(forReadingFrom: destination)
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(Self.gibibyte - block.count))
        #expect(try handle.readToEnd() == block)
    }

    /// A gibibyte streamed to a reader that stops now and then: the transfer pauses while the
    /// stream's buffer is full, and memory stays flat.
    @Test func aGibibyteStreamReadSlowlyKeepsMemoryFlat() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                lowerThisProcesssPriority()
                let before = try residentBytes("VmRSS")
                let block = patterned(bytes: 1 << 20, seed: 5)
                let server = try LoopbackServer { _ in
                    ServerResponse(headers: ["Content-Type": "application/octet-stream"], body: block, behavior: .repeated(times: 1024))
                }
                defer { server.stop() }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 300), responseQueue: .global())
                var received = 0
                var nextPause = 0
                for try await chunk in api.stream(route: .get(server.baseURL + "/gibibyte"), options: RequestOptions(streamBufferSize: 1 << 20)) {
                    received += chunk.count
                    if received >= nextPause {   // a slow reader, every 64 MiB
                        try await Task.sleep(for: .milliseconds(100))
                        nextPause += 64 << 20
                    }
                }
                guard received == LargeTransferTests.gibibyte else { exit(EXIT_FAILURE) }
                print(try residentBytes("VmHWM") - before)
            }
        }
        #expect(growth(printedBy: child).map { $0 < Self.allowedGrowth } == true, "\(report(of: child))")
    }

    @Test func aGibibyteUploadKeepsMemoryFlat() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Sparse: a gibibyte to read that takes no room on disk.
        let source = directory.appendingPathComponent("gibibyte.bin")
        #expect(FileManager.default.createFile(atPath: source.path, contents: nil))
        try FileHandle(forWritingTo: source).truncate(atOffset: UInt64(Self.gibibyte))

        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [path = source.path as String] in
                lowerThisProcesssPriority()
                let before = try residentBytes("VmRSS")
                let server = try LoopbackServer(keepingBodiesUpTo: 0) { request in .text(String(request.bodyLength)) }
                defer { server.stop() }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 300), responseQueue: .global())
                let received: String = try await api.request(route: .put(server.baseURL + "/upload"), parameters: BodyParameters(URL(fileURLWithPath: path))).value
                guard received == String(LargeTransferTests.gibibyte) else { exit(EXIT_FAILURE) }
                print(try residentBytes("VmHWM") - before)
            }
        }
        #expect(growth(printedBy: child).map { $0 < Self.allowedGrowth } == true, "\(report(of: child))")
    }
}

/// The growth of peak resident memory a child printed, in bytes.
func growth(printedBy child: ExitTest.Result?) -> Int? {
    child.flatMap { Int(String(decoding: $0.standardOutputContent, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) }
}

/// What a child said, for a failure's message.
func report(of child: ExitTest.Result?) -> String {
    growth(printedBy: child).map { "peak resident memory grew \($0 >> 20) MiB" }
        ?? "the child printed \(child.map { String(decoding: $0.standardOutputContent, as: UTF8.self) } ?? "nothing")"
}

/// Gives the calling thread, and every thread it starts from now on, the lowest priority: Linux
/// keeps one per thread, and "this process" (0) means the calling thread.
func lowerThisProcesssPriority() {
    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
}

/// A new empty folder under the system's temporary directory, its name starting with
/// `prefix`; the caller removes it.
func newFolder(_ prefix: String) throws -> URL {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder
}

/// A line of this process's `/proc/self/status` ("VmRSS", "VmHWM"), in bytes.
func residentBytes(_ field: String) throws -> Int {
    let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
          let kibibytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else {
        throw CocoaError(.fileReadCorruptFile)
    }
    return kibibytes << 10
}

/// A new empty directory in memory (`/dev/shm`) where there is one, else under the system's
/// temporary directory. A gigabyte written to disk, then moved into place and deleted, held every
/// other test's file operations behind the journal for seconds (ext4 flushes a file's data
/// before a rename replaces another), and tests waiting on downloads timed out.
private func temporaryDirectory() throws -> URL {
    let memory = URL(fileURLWithPath: "/dev/shm")
    let base = FileManager.default.isWritableFile(atPath: memory.path) ? memory : FileManager.default.temporaryDirectory
    let directory = base.appendingPathComponent("tern-large-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}
#endif
