// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
import TernTesting

/// A stream whose head the app's code judges (here a plugin that takes four seconds over its
/// `didReceive`, as a plugin writing a log to a slow disk may), while the server sends 96 MiB
/// at about 20 MiB/s. (Faster, over URLSession, what FoundationNetworking reads but has not yet
/// handed on waits in its own delegate queue, beyond a client's reach: on a loaded CI machine a
/// flood at 100 MiB/s grew a child by 138 MiB although Tern held 4 MiB, and unpaced by 283 MiB.)
///
/// StreamingResponses.md: "A stream's memory stays near its buffer size, however long it runs and
/// however the reader paces itself ... (where the transport cannot pause, within the ceiling
/// above)", the ceiling being four times the buffer, at least 4 MiB. Over libcurl the transfer
/// is paused while the head is judged, and memory stays flat. Over URLSession on Linux, which
/// cannot pause, what came while the head was judged was held without any bound (the child's peak
/// grew by about what was sent while the head was judged); it is now held up to the stream's ceiling, past which the stream ends
/// with `responseTooLarge`. No time limit: an exit test waits its turn.
@Suite(.onTestThreads, .exitTest) struct JudgedHeadFloodMemoryAttackTests {
    static let allowedGrowth = 40 << 20

    final class SlowPlugin: Plugin {
        func observe(_ event: PluginEvent, api: APIContext) {
            if case .didReceive = event { Thread.sleep(forTimeInterval: 4) }
        }
    }

    @Test func aFloodWhileTheHeadIsJudgedIsHeldWithinTheCeiling() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                let piece = [UInt8](repeating: UInt8(ascii: "x"), count: 1 << 20)
                let server = try RawServer { connection in
                    guard connection.readRequest() != nil else { return }
                    guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: \(96 << 20)\r\n\r\n") else { return }
                    for _ in 0..<96 {
                        guard connection.send(piece) else { return }
                        usleep(50_000)
                    }
                }
                defer { server.stop() }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 60, retryPolicy: .never, plugins: [SlowPlugin()]),
                                      transport: TestTransport.make(), responseQueue: .global())
                let before = try residentBytes("VmHWM")
                let stream = api.stream(route: .get(server.baseURL + "/flood"))
                var (received, outcome) = (0, "end")
                do {
                    for try await chunk in stream { received += chunk.count }
                } catch {
                    outcome = (error as? APIError)?.caseName ?? "untyped"
                }
                print("\(received) \(outcome) peak \(try residentBytes("VmHWM") - before)")
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let words = printed.split(whereSeparator: \.isWhitespace).map(String.init)
        guard words.count >= 4, let peak = Int(words[3]) else {
            Issue.record("nothing printed: \(printed)")
            return
        }
        // Read whole, or, over a transport that cannot pause, ended at its ceiling, typed.
        #expect(words[1] == "end" || !TestTransport.pauses && words[1] == "responseTooLarge", "\(printed)")
        #expect(peak < Self.allowedGrowth, "peak grew \(peak >> 20) MiB: \(printed)")
    }
}
#endif
