// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
import TernTesting

/// A large download recorded: the recorder does not keep every byte that went by, nor write
/// them into the file; memory stays near what a recording keeps, whatever the size. Measured in
/// a child process of its own (an exit test), as `LargeTransferTests` measure theirs.
@Suite(.onTestThreads, .exitTest, .enabled(if: TestTransport.isCurl))
struct RecordingMemoryTests {
    static let allowedGrowth = 160 << 20

    @Test func recordingALargeDownloadKeepsMemoryBounded() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                lowerThisProcesssPriority()
                let folder = try newFolder("tern-har-")
                defer { try? FileManager.default.removeItem(at: folder) }
                let before = try residentBytes("VmRSS")
                let block = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) })
                let server = try LoopbackServer { _ in
                    ServerResponse(headers: ["Content-Type": "application/octet-stream"], body: block, behavior: .repeated(times: 256))
                }
                defer { server.stop() }
                let recorder = try RecordingTransport(file: folder.appendingPathComponent("large.har"), mode: .record)
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 300, retryPolicy: .never), transport: recorder, responseQueue: .global())
                // Refused as too large to record, at its head (its length stated): not kept.
                let result = await api.download(route: .get(server.baseURL + "/large"), to: folder.appendingPathComponent("large.bin")).result
                let grown = try residentBytes("VmHWM") - before
                guard case .failure(let error) = result, "\(error)".contains("not recorded") else {
                    print("peak resident memory grew \(grown >> 20) MiB; the download: \(result)")
                    exit(EXIT_FAILURE)
                }
                print(grown)
            }
        }
        #expect(growth(printedBy: child).map { $0 < Self.allowedGrowth } == true, "\(report(of: child))")
    }
}
#endif
