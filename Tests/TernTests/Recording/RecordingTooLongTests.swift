import Foundation
import Testing
import Tern
import TernTesting

/// A response longer than the 64 MiB a recording keeps, recorded: one whose head says so fails
/// at its head, before a byte of its body, leaving nothing beside its destination; an answer
/// whose stated length is no body coming (to a `HEAD`) is recorded.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingTooLongTests {
    /// A server answering each request with 80 MiB, their length stated.
    static func server() throws -> LoopbackServer {
        let block = Data(repeating: 7, count: 1 << 20)
        return try LoopbackServer { _ in ServerResponse(headers: ["Content-Type": "application/octet-stream"], body: block, behavior: .repeated(times: 80)) }
    }

    /// Found by helper firsthour95: a 200 MB download recorded was fetched whole, failed only
    /// then, and left its bytes and a record to resume them, hidden beside its destination, for
    /// every run of a test that named a new one.
    @Test func aDownloadLongerThanARecordingKeepsFailsAtItsHeadAndLeavesNothing() async throws {
        let file = scratchRecording()
        let folder = file.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try Self.server()
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: try RecordingTransport(file: file, mode: .record),
                              responseQueue: .global())
        let received = Recorder<Int64>()
        let result = await api.download(route: .get(server.baseURL + "/large.bin"), to: folder.appendingPathComponent("large.bin"))
            .onProgress { progress in if progress.direction == .download { received.append(progress.completedBytes) } }.result
        guard case .failure(let error) = result else {
            Issue.record("a download longer than a recording keeps was recorded")
            return
        }
        #expect("\(error)".contains("83886080 bytes or more: longer than the 64 MiB a recording keeps"), "\(error)")
        #expect(received.items.allSatisfy { $0 == 0 }, "\(received.items.last ?? 0) bytes came")
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0 != file.lastPathComponent }
        #expect(left == [], "beside the destination: \(left)")
    }

    /// A `HEAD` stating the same length has no body coming: recorded, and replayed.
    @Test func aHeadStatingAGreatLengthIsRecorded() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let server = try Self.server()
        let baseURL = server.baseURL
        let recording = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: try RecordingTransport(file: file, mode: .record),
                                    responseQueue: .global())
        let recorded: Response = try await recording.request(route: .head(baseURL + "/large.bin")).value
        server.stop()
        #expect(recorded.headers["Content-Length"] == "83886080")

        let replaying = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: try RecordingTransport(file: file, mode: .replay),
                                    responseQueue: .global())
        let replayed: Response = try await replaying.request(route: .head(baseURL + "/large.bin")).value
        #expect(replayed.headers["Content-Length"] == "83886080")
    }
}
