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
                let folder = try newFolder("tern-har-")
                defer { try? FileManager.default.removeItem(at: folder) }
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

    /// A JSON answer just short of what a recording keeps, recorded with a secret to hide that
    /// it does not hold: kept and written, with peak memory bounded as the stream's, and the
    /// answer not read into objects to look for the secret's member.
    @Test func recordingALargeJSONAnswerWithSecretsKeepsMemoryNearWhatItKeeps() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                lowerThisProcesssPriority()
                let folder = try newFolder("tern-har-")
                defer { try? FileManager.default.removeItem(at: folder) }
                let file = folder.appendingPathComponent("products.har")
                let item = #"{"id": 1, "name": "\#(String(repeating: "t", count: 200))", "price": 3, "tags": ["a", "b"]},"#
                var text = "[" + String(repeating: item, count: RecordingStreamMemoryAttackTests.kept / item.utf8.count - 1)
                text.removeLast()
                text += "]"
                let body = Data(text.utf8)
                text = ""
                let stubs = StubTransport()
                stubs.add(Stub(.get, "/products", answers: .status(200, headers: ["Content-Type": "application/json"], body: body)))
                let before = try residentBytes("VmRSS")
                let recorder = try RecordingTransport(file: file, mode: .record, upstream: stubs, options: RecordingOptions(secrets: ["password"]))
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 300, retryPolicy: .never), transport: recorder, responseQueue: .global())
                let received: Data = try await api.request(route: .get("https://shop.example/products")).value
                let grown = try residentBytes("VmHWM") - before
                let written = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
                guard received.count == body.count, written > body.count else {
                    print("received \(received.count), file \(written) bytes, peak grew \(grown >> 20) MiB")
                    exit(EXIT_FAILURE)
                }
                print(grown)
            }
        }
        // The answer itself is held too, and its quotes are escaped in the file: 316 MiB measured
        // (1,124 MiB when the body was read as JSON to look for the secret's member).
        #expect(growth(printedBy: child).map { $0 < Self.allowedGrowth + RecordingStreamMemoryAttackTests.kept } == true, "\(report(of: child))")
    }
}
#endif
