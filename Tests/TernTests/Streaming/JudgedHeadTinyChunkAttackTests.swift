import Foundation
import Testing
import Tern
import TernTesting

/// The attacker answers a stream with a body of one-byte chunks (HTTP/1.1 chunked framing,
/// `1\r\nx\r\n` again and again) while the app's plugin takes its time over the head (it logs
/// to a slow disk, say): a transport that cannot pause (URLSession on Linux) goes on handing
/// over chunks, which wait for the head's judgement. The user must see every byte, in order,
/// once the plugin is done, not a reader stuck while each chunk held copies every one before it.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct JudgedHeadTinyChunkAttackTests {
    /// A plugin that takes a second and a half over each head it hears.
    struct SlowPlugin: Plugin {
        func observe(_ event: PluginEvent, api: APIContext) {
            if case .didReceive = event { Thread.sleep(forTimeInterval: 1.5) }
        }
    }

    /// Bytes sent in one-byte chunks: under the ceiling of what waits for a head (4 MiB), and
    /// few enough that FoundationNetworking, which takes about 30 µs over each chunk, sends them
    /// within the minute under the thread sanitizer (a mebibyte took 37 s unsanitized beside
    /// other tests); held by copying, as before the fix, 65,536 chunks take minutes.
    static let size = 64 << 10

    /// A server that answers `size` bytes of `x`, each in a chunk of its own.
    static func oneByteChunks(_ size: Int) throws -> RawServer {
        try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n") else { return }
            let piece = Array(String(repeating: "1\r\nx\r\n", count: 8192).utf8)
            for _ in 0..<(size / 8192) { guard connection.send(piece) else { return } }
            _ = connection.send("0\r\n\r\n")
        }
    }

    @Test func oneByteChunksHeldWhileAPluginJudgesTheHeadAreReadInOnePass() async throws {
        let size = Self.size
        let server = try Self.oneByteChunks(size)
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 50, retryPolicy: .never, plugins: [SlowPlugin()]),
                              transport: TestTransport.make(), responseQueue: .global())
        let stream = api.stream(route: .get(server.baseURL + "/drip"), options: RequestOptions(streamBufferSize: 2 << 20))
        var count = 0
        for try await chunk in stream {
            count += chunk.count { $0 == UInt8(ascii: "x") }
        }
        #expect(count == size)
    }
}
