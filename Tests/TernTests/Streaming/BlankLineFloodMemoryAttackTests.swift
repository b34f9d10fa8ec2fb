// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
import TernTesting

/// An event stream, gzip-compressed as servers send them, that opens with one comment line of
/// 3,000 bytes and then sends 8 MiB of empty lines (and one event at the end). Compressed, the
/// whole body is a few kilobytes; decoded, Tern hands the parser pieces of up to 64 KiB.
///
/// StreamingResponses.md: "A stream's memory stays near its buffer size, however long it runs and
/// however the reader paces itself" (1 MiB by default), and StreamMemoryAttackTests bounds a
/// flood of one-byte lines after a long one at 80 MiB of growth. Here the child's peak grows by
/// hundreds of MiB: `LineSplitter.startLine()` keeps the capacity of the line it hands over when
/// that is 4 KiB or less, and since the handed-over line still holds the old storage, each line
/// after it, even an empty one, gets a new buffer of that capacity; `lines(in:)` collects every
/// line of a chunk before the parser reads one, so a 64 KiB piece of line ends is 65,536 buffers
/// of about 4 KiB at once (256 MiB). The same for `lines` (LF), twice over: `ResponseLines`
/// keeps the chunk's lines in `ready`, an `ArraySlice` whose `popFirst()` lets go of none of them
/// until the next chunk's lines have all been made. Observed over libcurl: events 251 MiB, lines
/// 505 MiB; over URLSession (FoundationNetworking hands over 16 KiB decoded chunks): lines
/// 134 MiB, events about 64 MiB, under the bound (that case passes there). No time limit: an
/// exit test waits its turn.
@Suite(.onTestThreads, .exitTest) struct BlankLineFloodMemoryAttackTests {
    static let allowedGrowth = 80 << 20

    @Test(arguments: ["events", "lines"])
    func emptyLinesAfterALongOneCostNoBufferEach(view: String) async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) { [view = view as String] in
                var decoded = Data((": " + String(repeating: "x", count: 3000) + "\n").utf8)
                decoded.append(Data(repeating: UInt8(ascii: "\n"), count: 8 << 20))
                decoded.append(Data("data: done\n\n".utf8))
                let body = GzipStream.compressed(decoded)
                let server = try RawServer { connection in
                    guard connection.readRequest() != nil else { return }
                    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nContent-Length: \(body.count)\r\n\r\n"
                    guard connection.send(head) else { return }
                    connection.send([UInt8](body))
                }
                defer { server.stop() }
                let api = AbstractAPI(configuration: APIConfiguration(timeout: 60, retryPolicy: .never), transport: TestTransport.make(),
                                      responseQueue: .global())
                let before = try residentBytes("VmHWM")
                let stream = api.stream(route: .get(server.baseURL + "/flood"))
                var (count, last, outcome) = (0, "", "end")
                do {
                    if view == "events" {
                        for try await event in stream.events { last = event.data }
                    } else {
                        for try await line in stream.lines { count += 1; last = line }
                    }
                } catch {
                    outcome = (error as? APIError)?.caseName ?? "untyped"
                }
                print("\(view) \(count) \(last.isEmpty ? "-" : last) \(outcome) peak \(try residentBytes("VmHWM") - before)")
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let words = printed.split(whereSeparator: \.isWhitespace).map(String.init)
        guard let peak = words.last.flatMap({ Int($0) }), words.count >= 6 else {
            Issue.record("nothing printed: \(printed)")
            return
        }
        // Read whole (or, over a transport that cannot pause, ended at its ceiling, typed).
        #expect(words[3] == "end" || !TestTransport.pauses && words[3] == "responseTooLarge", "\(printed)")
        #expect(peak < Self.allowedGrowth, "peak grew \(peak >> 20) MiB reading \(view): \(printed)")
    }
}
#endif
