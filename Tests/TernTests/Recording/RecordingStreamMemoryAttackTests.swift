// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
import TernTesting

/// A long stream of Server-Sent Events recorded, just short of the 64 MiB a recording keeps:
/// kept, and written into the file, with peak memory a few times what is kept (the body, its
/// text, the archive's encoding and the file's bytes: 4.3 times, 259 MiB for 60 MiB, when
/// written), not growing with each copy more. Measured in a child process of its own, as
/// ``RecordingMemoryTests`` measure a download the recording refuses.
@Suite(.onTestThreads, .exitTest, .enabled(if: TestTransport.isCurl))
struct RecordingStreamMemoryAttackTests {
    static let kept = 60 << 20
    static let allowedGrowth = 5 * kept

    @Test func recordingALongEventStreamKeepsMemoryNearWhatItKeeps() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                lowerThisProcesssPriority()
                let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tern-har-\(UUID().uuidString)")
                defer { try? FileManager.default.removeItem(at: folder) }
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                let file = folder.appendingPathComponent("events.har")
                let before = try residentBytes("VmRSS")
                // 1 MiB of events, each with a quote and a line the file must escape.
                let event = "id: 1\ndata: {\"tern\": \"" + String(repeating: "x", count: 990) + "\"}\n\n"
                var text = String(repeating: event, count: (1 << 20) / event.utf8.count)
                text += String(repeating: ":", count: (1 << 20) - text.utf8.count - 1) + "\n"
                let block = Data(text.utf8)
                let server = try LoopbackServer { _ in
                    ServerResponse(headers: ["Content-Type": "text/event-stream"], body: block,
                                   behavior: .repeated(times: RecordingStreamMemoryAttackTests.kept >> 20))
                }
                defer { server.stop() }
                let recorder = try RecordingTransport(file: file, mode: .record)
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 300, retryPolicy: .never), transport: recorder, responseQueue: .global())
                var received = 0
                for try await chunk in api.stream(route: .get(server.baseURL + "/events"), options: RequestOptions(streamBufferSize: 1 << 20)) {
                    received += chunk.count
                }
                let grown = try residentBytes("VmHWM") - before
                let written = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
                guard received == RecordingStreamMemoryAttackTests.kept, written > RecordingStreamMemoryAttackTests.kept else {
                    print("received \(received), file \(written) bytes, peak grew \(grown >> 20) MiB")
                    exit(EXIT_FAILURE)
                }
                print(grown)
            }
        }
        #expect(growth(printedBy: child).map { $0 < Self.allowedGrowth } == true, "\(report(of: child))")
    }
}
#endif
