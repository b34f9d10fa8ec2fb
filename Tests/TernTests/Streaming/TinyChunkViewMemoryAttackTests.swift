// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
import TernTesting

/// The attacker feeds a stream's views one byte per chunk (HTTP/1.1 chunked framing) to a
/// reader that looks away for two seconds first: a line that never ends (`lines`), an event
/// of endless `data:` lines (`events`, its data limited to 1 MiB), and an NDJSON line of
/// 1.5 MiB (`values(of:)`, lines limited to 1 MiB by default). The chunks waiting for the reader
/// are joined; what each view holds stays within its own limit: the child's memory grows by a
/// few times those limits and the stream's buffer, not by the bytes sent or the chunks they
/// came in, and each view ends with ``APIError/responseTooLarge(_:)``. In a child process (an
/// exit test), which measures its own peak.
///
/// Over libcurl only: FoundationNetworking queues an operation for each piece of body before
/// its delegate sees it (the Linux article; `TinyChunkMemoryAttackTests`).
@Suite(.onTestThreads, .exitTest, .enabled(if: TestTransport.isCurl, "FoundationNetworking queues each piece before Tern sees it"))
struct TinyChunkViewMemoryAttackTests {
    /// How far above its resident memory before the streams the child may peak.
    static let allowedGrowth = 24 << 20
    /// What each body sends, past every limit.
    static let size = 3 << 19

    enum Shape: String, CaseIterable, Sendable {
        case endlessLine, endlessEvent, longNDJSONLine
    }

    /// The body of `shape`, `size` bytes.
    static func body(_ shape: Shape) -> [UInt8] {
        switch shape {
        case .endlessLine: [UInt8](repeating: UInt8(ascii: "x"), count: size)
        case .endlessEvent:
            Array(String(repeating: "data: " + String(repeating: "y", count: 57) + "\n", count: size / 64).utf8)
        case .longNDJSONLine: Array(("[\"" + String(repeating: "z", count: size - 5) + "\"]\n").utf8)
        }
    }

    @Test func viewsFedOneByteAChunkHoldNoMoreThanTheirLimits() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 60, retryPolicy: .never), transport: TestTransport.make(),
                                      responseQueue: .global())
                let before = try residentBytes("VmRSS")
                for shape in Shape.allCases {
                    let body = TinyChunkViewMemoryAttackTests.body(shape)
                    let server = try RawServer { connection in
                        guard connection.readRequest() != nil else { return }
                        let type = shape == .endlessEvent ? "text/event-stream" : "application/x-ndjson"
                        guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: \(type)\r\nTransfer-Encoding: chunked\r\n\r\n") else { return }
                        var framed: [UInt8] = []
                        for byte in body {
                            framed.append(contentsOf: [UInt8(ascii: "1"), 13, 10, byte, 13, 10])
                            if framed.count >= 48 << 10 {
                                guard connection.send(framed) else { return }
                                framed.removeAll(keepingCapacity: true)
                            }
                        }
                        _ = connection.send(framed + Array("0\r\n\r\n".utf8))
                    }
                    defer { server.stop() }
                    let stream = api.stream(route: .get(server.baseURL + "/\(shape.rawValue)"))
                    var (count, outcome) = (0, "end")
                    do {
                        // The reader looks away while the server fills the buffer.
                        try await Task.sleep(for: .seconds(2))
                        switch shape {
                        case .endlessLine:
                            for try await _ in stream.lines { count += 1 }
                        case .endlessEvent:
                            for try await _ in stream.events(maximumEventLength: 1 << 20) { count += 1 }
                        case .longNDJSONLine:
                            for try await _ in stream.values(of: [String].self) { count += 1 }
                        }
                    } catch let error as APIError {
                        if case .responseTooLarge = error { outcome = "too-large" } else { outcome = "\(error)" }
                    } catch {
                        outcome = "untyped-\(error)"
                    }
                    print("\(shape.rawValue) \(count) \(outcome)")
                }
                print("peak \(try residentBytes("VmHWM") - before)")
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        for shape in Shape.allCases {
            #expect(lines.first { $0.first == shape.rawValue }.map { Array($0.dropFirst()) } == ["0", "too-large"], "\(shape): \(printed)")
        }
        let peak = lines.first { $0.first == "peak" }.flatMap { Int($0[1]) }
        #expect(peak.map { $0 < Self.allowedGrowth } == true, "peak grew \((peak ?? -1) >> 20) MiB: \(printed)")
    }
}
#endif
