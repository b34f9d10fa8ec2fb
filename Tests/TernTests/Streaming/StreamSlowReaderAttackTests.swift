// Exit tests that capture values need Swift 6.3.
#if os(Linux) && compiler(>=6.3)
import Foundation
import Testing
import Tern
import TernTesting
import TernTransport

/// A reader far slower than its server, over HTTPS with the API's pins checked and a disk cache
/// on: 48 MiB of NDJSON lines, and 48 MiB of Server-Sent Events, each read with a pause of 20 ms
/// every 512. The transport holds the server back (libcurl pauses), so every line and event
/// comes, the stream ends as the server ended it, and the child process's memory grows by far
/// less than what the server sent: neither the pins' check, nor the cache (which a stream
/// leaves aside), nor TLS keeps what the reader has not taken. In a child process (an exit
/// test), which measures its own peak; over libcurl, which alone checks pins on Linux.
@Suite(.onTestThreads, .enabled(if: !isThreadSanitized && TestTransport.isCurl))
struct StreamSlowReaderAttackTests {
    /// How far above its resident memory before the streams the child may peak: well under
    /// the 48 MiB each stream sends, loose enough for a noisy allocator.
    static let allowedGrowth = 40 << 20
    static let size = 48 << 20

    enum Shape: String, CaseIterable, Sendable {
        case ndjson, events
    }

    /// A 64 KiB piece the body repeats, and how many lines or events a piece holds.
    static func piece(_ shape: Shape) -> (bytes: [UInt8], count: Int) {
        switch shape {
        case .ndjson:
            // 64 lines of 1 KiB: `{"n":` then padding, `}` and a newline.
            let line = "{\"n\":\"" + String(repeating: "j", count: 1024 - 9) + "\"}\n"
            return (Array(String(repeating: line, count: 64).utf8), 64)
        case .events:
            // 64 events of 1 KiB: `data: ` 1016 bytes, two newlines.
            let event = "data: " + String(repeating: "e", count: 1016) + "\n\n"
            return (Array(String(repeating: event, count: 64).utf8), 64)
        }
    }

    @Test func aSlowReaderOfAPinnedCachedStreamHoldsTheServerBackInBoundedMemory() async throws {
        let child = await ExitTestTurns.inTurn {
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                let certificates = try TestCertificates()
                let pin = try certificates.pin(ofKey: "server.key")
                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-slow-\(UUID().uuidString)")
                defer { try? FileManager.default.removeItem(at: directory) }
                let cache = try HTTPCache(directory: directory)
                let before = try residentBytes("VmRSS")
                for shape in Shape.allCases {
                    let (piece, _) = StreamSlowReaderAttackTests.piece(shape)
                    let size = StreamSlowReaderAttackTests.size
                    let server = try RawServer { connection in
                        guard connection.readRequest() != nil else { return }
                        let type = shape == .events ? "text/event-stream" : "application/x-ndjson"
                        guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: \(type)\r\nCache-Control: max-age=600\r\nContent-Length: \(size)\r\n\r\n") else { return }
                        for _ in 0..<(size / piece.count) { guard connection.send(piece) else { return } }
                    }
                    let relay = try TLSRelay(certificates: certificates, to: server.port)
                    defer {
                        relay.stop()
                        server.stop()
                    }
                    let api = AbstractAPI(configuration: APIConfiguration(timeout: 120, retryPolicy: .never,
                                                                          certificatePins: try CertificatePins(["127.0.0.1": [pin]]), cache: cache),
                                          transport: try CurlTransport(trusting: certificates.authority), responseQueue: .global())
                    let stream = api.stream(route: .get(relay.baseURL + "/flood"))
                    var (count, outcome) = (0, "end")
                    do {
                        switch shape {
                        case .ndjson:
                            for try await line in stream.lines {
                                count += line.hasPrefix("{\"n\":") && line.utf8.count == 1023 ? 1 : 0
                                if count % 512 == 0 { try await Task.sleep(for: .milliseconds(20)) }
                            }
                        case .events:
                            for try await event in stream.events {
                                count += event.data.utf8.count == 1016 ? 1 : 0
                                if count % 512 == 0 { try await Task.sleep(for: .milliseconds(20)) }
                            }
                        }
                    } catch let error as APIError {
                        if case .responseTooLarge = error { outcome = "too large" } else { outcome = "\(error)" }
                    } catch {
                        outcome = "untyped \(error)"
                    }
                    print("\(shape.rawValue) \(count) \(outcome)")
                }
                print("peak \(try residentBytes("VmHWM") - before)")
                print("cached \(cache.byteCount)")
            }
        }
        let printed = String(decoding: child?.standardOutputContent ?? [], as: UTF8.self)
        let lines = printed.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        for shape in Shape.allCases {
            let words = lines.first { $0.first == shape.rawValue }
            let expected = Self.size / Self.piece(shape).bytes.count * Self.piece(shape).count
            #expect(words.map { Array($0.dropFirst()) } == ["\(expected)", "end"], "\(shape): \(printed)")
        }
        let peak = lines.first { $0.first == "peak" }.flatMap { Int($0[1]) }
        #expect(peak.map { $0 < Self.allowedGrowth } == true, "peak grew \((peak ?? -1) >> 20) MiB: \(printed)")
        #expect(lines.first { $0.first == "cached" }.map { $0[1] } == "0", "\(printed)")
    }
}
#endif
