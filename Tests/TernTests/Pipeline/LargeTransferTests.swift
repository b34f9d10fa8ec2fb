// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
import TernTesting

/// A gibibyte each way through Linux's default transport, with memory that stays flat. Each
/// transfer runs in a child process of its own (an exit test), which measures its own peak
/// resident memory: in this process, the other tests' memory would be counted too. The server
/// stays here, outside what is measured. Both ends run at the lowest priority: at full speed
/// they took the cores from tests running beside them that wait for less than a second.
@Suite(.serialized) struct LargeTransferTests {
    static let gibibyte = 1 << 30
    /// How far above its resident memory before the transfer a child may peak: flat means a
    /// bounded buffer, whatever the size.
    static let allowedGrowth = 32 << 20

    @Test func aGibibyteDownloadKeepsMemoryFlat() async throws {
        let block = patterned(bytes: 1 << 20, seed: 3)
        let server = try LoopbackServer { _ in
            lowerThisThreadsPriority()
            return ServerResponse(headers: ["Content-Type": "application/octet-stream"], body: block, behavior: .repeated(times: 1024))
        }
        defer { server.stop() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let destination = directory.appendingPathComponent("gibibyte.bin")

        let child = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            [url = server.baseURL + "/gibibyte" as String, path = destination.path as String] in
            lowerThisThreadsPriority()
            let before = try residentBytes("VmRSS")
            let api = AbstractAPI(configuration: APIConfiguration(timeout: 300), responseQueue: .global())
            _ = try await api.download(route: .get(url), to: URL(fileURLWithPath: path)).value
            print(try residentBytes("VmHWM") - before)
        }
        expectFlat(child)
        // Whole, and nothing else left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["gibibyte.bin"])
        let handle = try FileHandle(forReadingFrom: destination)
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(Self.gibibyte - block.count))
        #expect(try handle.readToEnd() == block)
    }

    @Test func aGibibyteUploadKeepsMemoryFlat() async throws {
        let received = Recorder<Int>()
        // A connection's thread reads a body before the handler runs: the child sends a first,
        // empty request, whose handler lowers the thread's priority, and the upload follows on
        // the same connection.
        let server = try LoopbackServer(keepingBodiesUpTo: 0) { request in
            lowerThisThreadsPriority()
            guard request.method == "PUT" else { return ServerResponse(status: 204) }
            received.append(request.bodyLength)
            return ServerResponse(status: 204)
        }
        defer { server.stop() }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Sparse: a gibibyte to read that takes no room on disk.
        let source = directory.appendingPathComponent("gibibyte.bin")
        #expect(FileManager.default.createFile(atPath: source.path, contents: nil))
        try FileHandle(forWritingTo: source).truncate(atOffset: UInt64(Self.gibibyte))

        let child = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            [url = server.baseURL + "/upload" as String, path = source.path as String] in
            lowerThisThreadsPriority()
            let before = try residentBytes("VmRSS")
            let api = AbstractAPI(configuration: APIConfiguration(timeout: 300), responseQueue: .global())
            try await (api.request(route: .get(url)) as Promise<Void>).value
            try await (api.request(route: .put(url), parameters: FileParameters(URL(fileURLWithPath: path))) as Promise<Void>).value
            print(try residentBytes("VmHWM") - before)
        }
        expectFlat(child)
        #expect(received.items == [Self.gibibyte])
    }
}

/// Checks the growth of peak resident memory a child printed.
private func expectFlat(_ child: ExitTest.Result?, sourceLocation: SourceLocation = #_sourceLocation) {
    let printed = child.map { String(decoding: $0.standardOutputContent, as: UTF8.self) } ?? ""
    let growth = Int(printed.trimmingCharacters(in: .whitespacesAndNewlines))
    #expect(growth.map { $0 < LargeTransferTests.allowedGrowth } == true,
            "peak resident memory grew \(growth.map { "\($0 >> 20) MiB" } ?? printed)", sourceLocation: sourceLocation)
}

/// Gives the calling thread, and the threads it starts from now on, the lowest priority: Linux
/// keeps one per thread, and "this process" (0) means the calling thread.
private func lowerThisThreadsPriority() {
    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
}

/// A line of this process's `/proc/self/status` ("VmRSS", "VmHWM"), in bytes.
private func residentBytes(_ field: String) throws -> Int {
    let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
          let kibibytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") else {
        throw CocoaError(.fileReadCorruptFile)
    }
    return kibibytes << 10
}

/// A new empty directory under the system's temporary one.
private func temporaryDirectory() throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-large-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}
#endif
