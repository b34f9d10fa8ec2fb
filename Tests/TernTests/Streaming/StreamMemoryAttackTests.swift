// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
import TernTesting

/// Streams read through their views whose shape costs memory: a flood of 1-byte lines, a line
/// that never ends, one event far larger than its limit. They run in a child process (an exit
/// test, server included), which measures its own peak resident memory: it stays within a
/// bound set by the streams' limits, not by what the server sent, and where a limit applies the
/// stream ends with a typed error, the lines before it delivered. (No time limit: an exit test
/// waits its turn behind the others, as in `LargeTransferTests`.)
@Suite(.onTestThreads, .enabled(if: !isThreadSanitized))
struct StreamMemoryAttackTests {
    /// How far above its resident memory before the stream a child may peak: generous (4 Mi
    /// lines of one byte peaked at 29 MiB in one run and 62 MiB in the next; 2 Mi of them, in 4 MiB, 43 MiB).
    /// Keeping the lines read, an array each of 48 bytes or more, would take 48 MiB a shape on
    /// top: the bound is loose, a check against growth with what was read, not a measure.
    static let allowedGrowth = 80 << 20

    enum Shape: String, CaseIterable, Sendable {
        /// 2 MiB of "x\n": 1 Mi lines of one byte, read with `lines`.
        case oneByteLines
        /// 2 MiB of 64 KiB pieces, each a line of 4,093 bytes then 30,721 lines of one byte.
        case oneByteLinesAfterALongOne
        /// 2 MiB with no newline, read with `lines` (its limit 1 MiB by default).
        case noNewline
        /// One event of 4 MiB of 1 KB data lines, read with `events` limited to 2 MiB.
        case hugeEvent
        /// 2 MiB of "data: x\n\n": 0.23 Mi events of one byte, read with `events` (the same limit).
        case oneByteEvents
    }

    /// The body's size, and a 64 KiB piece it repeats.
    static func body(_ shape: Shape) -> (size: Int, piece: [UInt8]) {
        switch shape {
        case .oneByteLines: (2 << 20, Array(String(repeating: "x\n", count: 32 << 10).utf8))
        case .oneByteLinesAfterALongOne:
            (2 << 20,
             Array((String(repeating: "z", count: 4093) + "\n" + String(repeating: "x\n", count: 30721)).utf8))
        case .noNewline: (2 << 20, [UInt8](repeating: 0x78, count: 64 << 10))
        case .hugeEvent:
            (4 << 20, Array(String(repeating: "data: " + String(repeating: "y", count: 1017) + "\n", count: 64).utf8))
        case .oneByteEvents:
            // 9 bytes an event: a piece of 7,281 events and a comment line of 7 bytes.
            (2 << 20, Array((String(repeating: "data: x\n\n", count: 7281) + ":empty\n").utf8))
        }
    }

    /// Every shape in turn, in one child (exit tests take turns, and each child costs the
    /// others' time): what each read, how it ended, and the child's peak over all of them.
    @Test func aStreamsMemoryIsBoundedByItsLimitsNotByWhatItRead() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                let before = try residentBytes("VmRSS")
                for shape in Shape.allCases {
                    let (size, piece) = StreamMemoryAttackTests.body(shape)
                    let server = try RawServer { connection in
                        guard connection.readRequest() != nil else { return }
                        guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: \(size)\r\n\r\n") else { return }
                        for _ in 0..<(size / piece.count) { guard connection.send(piece) else { return } }
                    }
                    defer { server.stop() }
                    let api = AbstractAPI(configuration: APIConfiguration(timeout: 60, retryPolicy: .never), transport: TestTransport.make(),
                                          responseQueue: .global())
                    let stream = api.stream(route: .get(server.baseURL + "/flood"))
                    var (count, outcome) = (0, "end")
                    do {
                        switch shape {
                        case .oneByteLines, .oneByteLinesAfterALongOne, .noNewline:
                            for try await line in stream.lines { count += line == "x" ? 1 : 0 }
                        case .hugeEvent, .oneByteEvents:
                            for try await event in stream.events(maximumEventLength: 2 << 20) { count += event.data == "x" ? 1 : 0 }
                        }
                    } catch let error as APIError {
                        if case .responseTooLarge = error { outcome = "too large" } else { outcome = "\(error)" }
                    } catch {
                        outcome = "untyped \(error)"
                    }
                    print("\(shape.rawValue) \(count) \(outcome)")
                }
                print("peak \(try residentBytes("VmHWM") - before)")
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        for shape in Shape.allCases {
            guard let words = lines.first(where: { $0.first == shape.rawValue }), words.count >= 3, let count = Int(words[1]) else {
                Issue.record("\(shape): nothing printed: \(printed)")
                continue
            }
            let outcome = words.dropFirst(2).joined(separator: " ")
            // Over a transport that cannot pause, a reader slower than the server ends at the
            // stream's ceiling instead, having read some.
            let cutShort = !TestTransport.pauses && outcome == "too large" && count > 0
            switch shape {
            case .oneByteLines: #expect(count == 1 << 20 && outcome == "end" || cutShort, "\(shape): \(count) \(outcome)")
            case .oneByteLinesAfterALongOne: #expect(count == 32 * 30721 && outcome == "end" || cutShort, "\(shape): \(count) \(outcome)")
            case .oneByteEvents: #expect(count == 32 * 7281 && outcome == "end" || cutShort, "\(shape): \(count) \(outcome)")
            case .noNewline, .hugeEvent: #expect(count == 0 && outcome == "too large", "\(shape): \(count) \(outcome)")
            }
        }
        let peak = lines.last.flatMap { $0.first == "peak" ? Int($0[1]) : nil }
        #expect(peak.map { $0 < Self.allowedGrowth } == true, "peak grew \((peak ?? -1) >> 20) MiB: \(printed)")
    }
}
#endif
