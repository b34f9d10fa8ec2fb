// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
import TernTesting

/// The attacker streams its body in chunks of one byte each (HTTP/1.1 chunked framing, `1\r\nx\r\n`
/// again and again) to a reader that stops reading for a while: the transport hands each one
/// over as a chunk of its own. The bytes waiting for the reader stay within the stream's buffer
/// (2 MiB here), and so does what holds them: the child process's memory may not grow by many
/// times the buffer while the reader waits, and every byte still comes, in order. In a child
/// process (an exit test), which measures its own peak.
///
/// Over libcurl only: FoundationNetworking queues an operation for each piece of body before
/// its delegate sees it, about 350 bytes a piece, faster than its queue runs them. A bare
/// URLSession client, no Tern in it, grew 264 MiB reading 768 KiB so (the Linux article).
@Suite(.onTestThreads, .exitTest, .enabled(if: TestTransport.isCurl, "FoundationNetworking queues each piece before Tern sees it"))
struct TinyChunkMemoryAttackTests {
    /// The stream's buffer, and the bytes the server sends in one-byte chunks, past it.
    static let bufferSize = 2 << 20
    static let size = 3 << 20
    /// How far above its resident memory before the stream the child may peak: a few times the
    /// buffer.
    static let allowedGrowth = 16 << 20

    @Test func oneByteChunksWaitingForTheReaderTakeAboutTheirBytes() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                let size = TinyChunkMemoryAttackTests.size
                let server = try JudgedHeadTinyChunkAttackTests.oneByteChunks(size)
                defer { server.stop() }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 60, retryPolicy: .never), transport: TestTransport.make(),
                                      responseQueue: .global())
                let before = try residentBytes("VmRSS")
                let stream = api.stream(route: .get(server.baseURL + "/drip"),
                                        options: RequestOptions(streamBufferSize: TinyChunkMemoryAttackTests.bufferSize))
                var (count, outcome, waited) = (0, "end", false)
                do {
                    for try await chunk in stream {
                        count += chunk.count { $0 == UInt8(ascii: "x") }
                        if !waited {
                            // The reader looks away while the server fills the buffer.
                            waited = true
                            try await Task.sleep(for: .seconds(3))
                        }
                    }
                } catch {
                    outcome = "\(error)"
                }
                print("read \(count) \(outcome)")
                print("peak \(try residentBytes("VmHWM") - before)")
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(lines.first { $0.first == "read" }.map { Array($0.dropFirst()) } == ["\(Self.size)", "end"], "\(printed)")
        let peak = lines.first { $0.first == "peak" }.flatMap { Int($0[1]) }
        #expect(peak.map { $0 < Self.allowedGrowth } == true, "peak grew \((peak ?? -1) >> 20) MiB: \(printed)")
    }
}
#endif
