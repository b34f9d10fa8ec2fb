#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// Compressed bodies that inflate a thousandfold (a few kilobytes on the wire, megabytes
/// undone), played against the features that keep or pass on a body: the cache (whose limits
/// count the undone bytes, so a bomb is never kept however small its wire length), a download's
/// file limit, and event streams and lines whose limits must end a line that never ends. Over
/// the transport under test; each settles once, typed.
@Suite(.onTestThreads, .timeLimit(.minutes(2))) struct CompressedWireAttackTests {
    /// A server answering every request with `head` and `body` (by its length), and keeping the
    /// requests' heads.
    static func server(head: String, body: Data, requests: Recorder<String>) throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                requests.append(request)
                guard connection.send(Array("\(head)\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + [UInt8](body)) else { return }
            }
        }
    }

    static func api(maximumResponseSize: SizeLimit = .megabytes(64), cache: HTTPCache? = nil) -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 60, maximumResponseSize: maximumResponseSize, retryPolicy: .never, cache: cache),
                    transport: TestTransport.make(), responseQueue: .global())
    }

    /// A bomb of 4 MiB that is whole (its checksum right), 20 KB on the wire, marked fresh for
    /// ten minutes: the body arrives whole each time (no limit on it), and the cache, whose limit
    /// for one answer is 1 MiB, keeps none of it: each request reaches the server. Kept by its
    /// wire length, the second would be a hit; on disk, nothing is written past the limit.
    @Test(arguments: [false, true])
    func aBombUnderTheCachesLimitOnTheWireIsNotKept(onDisk: Bool) async throws {
        let size = 4 << 20
        let bomb = WireBomb.gzip(repeating: 0x61, count: size)
        #expect(bomb.count < 40_000)
        let requests = Recorder<String>()
        let server = try Self.server(head: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\nCache-Control: max-age=600",
                                     body: bomb, requests: requests)
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-bomb-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = onDisk ? try HTTPCache(directory: directory, maximumBytes: 8 << 20, maximumResponseBytes: 1 << 20)
                           : HTTPCache(maximumBytes: 8 << 20, maximumResponseBytes: 1 << 20)
        let api = Self.api(maximumResponseSize: .unlimited, cache: cache)
        for _ in 0..<2 {
            let body: Data = try await api.request(route: .get(server.baseURL + "/bomb")).value
            #expect(body.count == size && body.allSatisfy { $0 == 0x61 })
        }
        #expect(requests.items.count == 2)
        if onDisk {
            let files = (FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.fileSizeKey])?.allObjects as? [URL]) ?? []
            let written = files.compactMap { try? $0.resourceValues(forKeys: [.fileSizeKey]).fileSize }.reduce(0, +)
            #expect(written < 1 << 20, "\(written) bytes in the cache's directory")
        }
    }

    /// Three answers of 1.5 MiB each, a few kilobytes each on the wire, into a cache of 3 MiB:
    /// the cache's whole limit counts the bytes undone too, so at most two stay; asked again,
    /// at least one goes back to the server, and the directory holds no more than its limit.
    @Test(arguments: [false, true])
    func bombsUnderEachLimitFillTheCacheByTheirBytesUndone(onDisk: Bool) async throws {
        let size = 3 << 19
        let requests = Recorder<String>()
        let bombs = (0..<3).map { WireBomb.gzip(repeating: UInt8(0x61 + $0), count: size) }
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                requests.append(request)
                let index = Int(ConnectionReuseTests.name(of: request).dropFirst(4)) ?? 0
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\nCache-Control: max-age=600\r\nContent-Length: \(bombs[index].count)\r\n\r\n"
                guard connection.send(Array(head.utf8) + [UInt8](bombs[index])) else { return }
            }
        }
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-bomb-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = onDisk ? try HTTPCache(directory: directory, maximumBytes: 3 << 20, maximumResponseBytes: 2 << 20)
                           : HTTPCache(maximumBytes: 3 << 20, maximumResponseBytes: 2 << 20)
        let api = Self.api(maximumResponseSize: .unlimited, cache: cache)
        for _ in 0..<2 {
            for index in 0..<3 {
                let body: Data = try await api.request(route: .get(server.baseURL + "/bomb\(index)")).value
                #expect(body.count == size && body.allSatisfy { $0 == UInt8(0x61 + index) })
            }
        }
        #expect(requests.items.count >= 4, "\(requests.items.count) requests: three answers of 1.5 MiB kept in 3 MiB")
        if onDisk {
            let files = (FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.fileSizeKey])?.allObjects as? [URL]) ?? []
            let written = files.compactMap { try? $0.resourceValues(forKeys: [.fileSizeKey]).fileSize }.reduce(0, +)
            #expect(written <= (3 << 20) + 64 << 10, "\(written) bytes in the cache's directory")
        }
    }

    /// The same bomb and a body over the API's memory limit: the request fails as too large,
    /// and the cache has nothing to answer the next one with.
    @Test func aBombOverTheMemoryLimitFailsAndIsNotKept() async throws {
        let bomb = WireBomb.gzip(repeating: 0x61, count: 4 << 20)
        let requests = Recorder<String>()
        let server = try Self.server(head: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\nCache-Control: max-age=600",
                                     body: bomb, requests: requests)
        defer { server.stop() }
        let api = Self.api(maximumResponseSize: .megabytes(1), cache: HTTPCache(maximumBytes: 64 << 20, maximumResponseBytes: 32 << 20))
        for _ in 0..<2 {
            let failure = await tooLarge(api.request(route: .get(server.baseURL + "/bomb")) as Promise<Data>)
            #expect(failure?.limit == 1 << 20)
            #expect(failure?.declaredLength == nil)
        }
        #expect(requests.items.count == 2)
    }

    /// A download of a 256 MiB bomb, to a file limited to 1 MiB: it fails as too large, the limit
    /// counted in bytes undone, and leaves no file where it was to go.
    @Test func aBombDownloadStopsAtItsFilesLimitAndLeavesNoFile() async throws {
        let bomb = WireBomb.gzip(repeating: 0, count: 256 << 20, checked: false)
        let requests = Recorder<String>()
        let server = try Self.server(head: "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Encoding: gzip",
                                     body: bomb, requests: requests)
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-bomb-download-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let destination = directory.appendingPathComponent("bomb.bin")
        let failure = await tooLarge(Self.api().download(route: .get(server.baseURL + "/bomb"), to: destination, maximumSize: .megabytes(1)))
        #expect(failure?.limit == 1 << 20)
        #expect(failure?.declaredLength == nil)
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    /// An event stream whose one `data` line, compressed, undoes to 64 MiB: reading its events
    /// (or its lines) ends with a typed error at the line's limit, not after the whole of it, and
    /// no event is made of it.
    @Test(arguments: [false, true])
    func aBombOfOneLineInAnEventStreamEndsAtTheLinesLimit(asLines: Bool) async throws {
        let bomb = WireBomb.gzip(prefix: Array("data: first\n\ndata: ".utf8), repeating: 0x61, count: 64 << 20, suffix: Array("\n\n".utf8), checked: false)
        let requests = Recorder<String>()
        let server = try Self.server(head: "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip", body: bomb, requests: requests)
        defer { server.stop() }
        let stream = Self.api().stream(route: .get(server.baseURL + "/events"))
        var seen: [String] = []
        do {
            if asLines {
                for try await line in stream.lines(maximumLength: 64 << 10) { seen.append(String(line.prefix(20))) }
            } else {
                for try await event in stream.events(maximumLineLength: 64 << 10) { seen.append(String(event.data.prefix(20))) }
            }
            Issue.record("a line of 64 MiB was read whole: \(seen)")
        } catch let error as APIError {
            #expect("\(error)".contains("65536") || "\(error)".lowercased().contains("line"), "\(error)")
        }
        #expect(seen == (asLines ? ["data: first", ""] : ["first"]), "\(seen)")
    }

    /// The same stream read by an event source, which reconnects: each connection ends at the
    /// line's limit, and with `maximumFailures` the source fails typed instead of reading bombs
    /// forever.
    @Test func anEventSourceFedBombsFailsTypedAfterItsFailures() async throws {
        let bomb = WireBomb.gzip(prefix: Array("data: ".utf8), repeating: 0x61, count: 32 << 20, suffix: Array("\n\n".utf8), checked: false)
        let requests = Recorder<String>()
        let server = try Self.server(head: "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip", body: bomb, requests: requests)
        defer { server.stop() }
        var events = 0
        do {
            for try await _ in Self.api().events(route: .get(server.baseURL + "/events"), reconnection: EventReconnection(delay: 0.5, maximumFailures: 2)) {
                events += 1
            }
            Issue.record("the source ended without an error")
        } catch is APIError {
        }
        #expect(events == 0)
        #expect((1...3).contains(requests.items.count), "\(requests.items.count) requests")
    }
}

/// Deflate streams made by hand, in gzip's framing: `prefix`, then one byte repeated by
/// back-references of 258 bytes at distance 1 (thirteen bits each, so a thousandfold and
/// more), then `suffix`; with their CRC-32 when `checked`.
enum WireBomb {
    static func gzip(prefix: [UInt8] = [], repeating byte: UInt8, count: Int, suffix: [UInt8] = [], checked: Bool = true) -> Data {
        var bits = GzipBomb.BitWriter()
        bits.write(1, count: 1)                   // the final block
        bits.write(1, count: 2)                   // fixed Huffman codes
        func literal(_ value: UInt8) {
            if value < 144 { bits.writeCode(0x30 + UInt32(value), length: 8) } else { bits.writeCode(0x190 + UInt32(value) - 144, length: 9) }
        }
        prefix.forEach(literal)
        literal(byte)
        let repeats = (count - 1) / 258
        bits.writeCodes([(0xC5, 8), (0, 5)], times: repeats)   // length 258 (symbol 285), distance 1
        let tail = count - 1 - repeats * 258
        for _ in 0..<tail { literal(byte) }
        suffix.forEach(literal)
        bits.writeCode(0, length: 7)              // end of block
        var gzip = Data([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF])
        gzip.append(contentsOf: bits.bytes)
        var crc: UInt32 = 0
        if checked {
            var running: UInt32 = 0xFFFF_FFFF
            let table = crcTable
            func add(_ value: UInt8) { running = table[Int((running ^ UInt32(value)) & 0xFF)] ^ (running >> 8) }
            prefix.forEach(add)
            for _ in 0..<count { add(byte) }
            suffix.forEach(add)
            crc = ~running
        }
        let length = UInt32(truncatingIfNeeded: prefix.count + count + suffix.count)
        gzip.append(contentsOf: withUnsafeBytes(of: crc.littleEndian) { Array($0) })
        gzip.append(contentsOf: withUnsafeBytes(of: length.littleEndian) { Array($0) })
        return gzip
    }

    static let crcTable: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? value >> 1 ^ 0xEDB8_8320 : value >> 1 }
        return value
    }
}
#endif
