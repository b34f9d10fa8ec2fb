import Foundation
import Testing
@testable import Tern
@testable import TernCore
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The limit on response bodies kept in memory, and what a transfer that stops half-way says.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct ResponseLimitTests {
    /// An endless body used to reach 3 GB in 5 s. Now the transfer stops at the limit.
    @Test func anEndlessBodyStopsAtTheLimitAndClosesTheConnection() async throws {
        let server = try LoopbackServer { _ in ServerResponse(body: Data(repeating: 0x61, count: 64 * 1024)).with(.endless) }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL, configuration: APIConfiguration(maximumResponseSize: .megabytes(2), retryPolicy: .never))
        let failure = await tooLarge(api.request(route: api.get(endpoint: "/endless")) as Promise<Data>)
        #expect(failure?.limit == 2 << 20)
        #expect((failure?.receivedBytes ?? 0) > 2 << 20)
        #expect(failure?.description.contains("over the limit of 2 MiB") == true)
        #expect(await eventuallyClosed(server))
    }

    /// A 2 MB gzip bomb, which the default `Accept-Encoding` invites, used to exhaust memory:
    /// the limit counts bytes after decompression.
    @Test func aCompressionBombStopsAtTheLimit() async throws {
        let bomb = GzipBomb.make(expandingTo: 16 << 20)
        #expect(bomb.count < 200_000)
        let server = try LoopbackServer { _ in
            ServerResponse(headers: ["Content-Encoding": "gzip", "Content-Type": "application/octet-stream"], body: bomb)
        }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        let failure = await tooLarge(api.request(route: api.get(endpoint: "/bomb"), options: RequestOptions(maximumResponseSize: .megabytes(1))) as Promise<Data>)
        #expect(failure?.declaredLength == nil)
        #expect((failure?.receivedBytes ?? 0) > 1 << 20)
    }

    @Test func anAnnouncedLengthOverTheLimitStopsBeforeTheBody() async throws {
        let api = try TestAPI()
        let failure = await tooLarge(api.request(route: api.get(endpoint: "/huge?bytes=100000"), options: RequestOptions(maximumResponseSize: 1000)) as Promise<Data>)
        #expect(failure?.declaredLength == 100_000)
        #expect(failure?.receivedBytes == 0)
        #expect(failure?.url?.path == "/huge")
    }

    @Test func aBodyUpToTheLimitArrivesAndUnlimitedLiftsIt() async throws {
        let api = try TestAPI(configuration: APIConfiguration(maximumResponseSize: 1000, retryPolicy: .never))
        let exact: Data = try await api.request(route: api.get(endpoint: "/huge?bytes=1000")).value
        #expect(exact.count == 1000)
        let large: Data = try await api.request(route: api.get(endpoint: "/huge?bytes=200000"), options: RequestOptions(maximumResponseSize: .unlimited)).value
        #expect(large.count == 200_000)
        #expect(await apiError(of: api.request(route: api.get(endpoint: "/huge?bytes=1001")) as Promise<Data>)?.caseName == "responseTooLarge")
    }

    /// A transport that does not enforce the limit still cannot hand Tern a larger body.
    @Test func aBodyFromAnyTransportIsCheckedToo() async throws {
        let transport = TransportTests.ScriptedTransport { request in
            .success(TransportResponse(httpResponse: HTTPURLResponse(url: request.urlRequest.url!, statusCode: 200, httpVersion: nil, headerFields: nil)!,
                                       body: Data(count: 2048)))
        }
        let api = try TestAPI(baseURL: "https://example.invalid", configuration: APIConfiguration(maximumResponseSize: 1024), transport: transport)
        let failure = await tooLarge(api.request(route: api.get(endpoint: "/x")) as Promise<Data>)
        #expect(failure?.receivedBytes == 2048)
        #expect(failure?.statusCode == 200)
    }

    /// A head that never ends fails the request, typed, long before the timeout, and the
    /// connection closes; Tern's own limit over libcurl, libcurl's (300 KB) under URLSession.
    @Test func aHeadThatNeverEndsFailsTyped() async throws {
        let server = try LoopbackServer { _ in ServerResponse().with(.endlessHead) }
        defer { server.stop() }
        let api = try TestAPI(baseURL: server.baseURL)
        let error = await apiError(of: api.request(route: api.get(endpoint: "/flood")) as Promise<Data>)
        guard case .transportFailed(let failure)? = error else {
            Issue.record("expected transportFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.statusCode == nil, "no head was accepted")
        if TestTransport.isCurl {
            #expect(failure.urlError?.code == .badServerResponse)
            #expect("\(failure)".contains("the response's head passed 256 KiB"), "\(failure)")
        }
        #expect(await eventuallyClosed(server))
    }

    @Test(arguments: [-5, 0])
    func aLimitOfNothingTakesOnlyEmptyBodies(bytes: Int) async throws {
        let api = try TestAPI(configuration: APIConfiguration(maximumResponseSize: SizeLimit(bytes: bytes), retryPolicy: .never))
        try await (api.request(route: api.get(endpoint: "/empty/204")) as Promise<Void>).value
        #expect(await apiError(of: api.request(route: api.get(endpoint: "/products")) as Promise<Data>)?.caseName == "responseTooLarge")
    }

    /// A body cut short used to be described as failing "before a response arrived".
    @Test func aTruncatedBodySaysTheResponseHadBegun() async throws {
        let api = try TestAPI()
        let error = await apiError(of: api.request(route: api.get(endpoint: "/truncated")) as Promise<Data>)
        guard case .transportFailed(let failure)? = error else {
            Issue.record("expected transportFailed, got \(String(describing: error))")
            return
        }
        #expect(failure.statusCode == 200)
        #expect(failure.receivedBytes == 10)
        #expect(failure.urlError != nil)
        #expect(failure.description.contains("failed after its response began (status 200, 10 bytes of the body received)"))
        let hungUp = await apiError(of: api.request(route: api.get(endpoint: "/hangup")) as Promise<Data>)
        #expect(hungUp?.description.contains("failed before a response arrived") == true)
    }
}

/// Timeouts settle on time however slowly a network task is cancelled.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct TimeoutDeliveryTests {
    /// A transport whose tasks never answer, and which records each cancel that runs on the
    /// thread it is told is advancing a test clock, while it does.
    final class SilentTransport: WholeResponseTransport {
        let advancing = Locked<pthread_t?>(nil)
        let cancels = Recorder<Bool>()

        struct Task: TransportTask {
            let transport: SilentTransport
            func cancel() {
                let onTimersThread = transport.advancing.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
                transport.cancels.append(onTimersThread)
            }
        }

        func send(_ request: TransportRequest, completion: @escaping @Sendable (Result<TransportResponse, any Error>) -> Void) -> any TransportTask {
            Task(transport: self)
        }
    }

    /// 3,000 simultaneous timeouts used to settle up to 0.32 s late: each timer cancelled its
    /// task (synchronously, and slowly, in FoundationNetworking) before the next could fire.
    /// Timers fire on the thread that advances a test clock: no cancel may run there.
    @Test func aTimeoutCancelsItsTaskOffTheTimersThread() async throws {
        let transport = SilentTransport()
        let clock = TestClock()
        let api = try TestAPI(baseURL: "https://example.invalid", transport: transport, clock: clock)
        let promises: [Promise<Data>] = (0..<20).map { index in
            api.request(route: api.get(endpoint: "/\(index)"), options: RequestOptions(timeout: 1))
        }
        #expect(await clock.waitForScheduled(20))
        api.pipelineQueue.sync(flags: .barrier) {}  // every request has handed its task over
        // Swift's tasks run on dispatch's threads too: only a cancel while this one is advancing counts.
        transport.advancing.withLock { $0 = pthread_self() }
        clock.advance(by: 1)
        transport.advancing.withLock { $0 = nil }
        for promise in promises {
            #expect(await apiError(of: promise)?.caseName == "timeout")
        }
        #expect(await eventually { transport.cancels.items.count == 20 })
        #expect(!transport.cancels.items.contains(true))
    }
}

/// A gzip stream that expands enormously: deflate's fixed codes, one zero, then back-references
/// of 258 bytes at distance 1, 13 bits each. The checksum is left out: the client must stop long
/// before it would read it.
enum GzipBomb {
    /// A gzip stream of about `size` zero bytes; its CRC-32 is computed only when `checked`, as a
    /// body meant to be read whole needs (slow for large sizes in a debug build).
    static func make(expandingTo size: Int, checked: Bool = false) -> Data {
        var bits = BitWriter()
        bits.write(1, count: 1)                   // the final block
        bits.write(1, count: 2)                   // fixed Huffman codes
        bits.writeCode(0x30, length: 8)           // literal 0
        bits.writeCodes([(0xC5, 8), (0, 5)], times: size / 258)   // length 258 (symbol 285), distance 1
        bits.writeCode(0, length: 7)              // end of block
        var gzip = Data([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF])
        gzip.append(contentsOf: bits.bytes)
        let length = UInt32(truncatingIfNeeded: size / 258 * 258 + 1)
        let crc = checked ? crc32(ofZeros: Int(length)) : 0
        gzip.append(contentsOf: withUnsafeBytes(of: crc.littleEndian) { Array($0) })
        gzip.append(contentsOf: withUnsafeBytes(of: length.littleEndian) { Array($0) })
        return gzip
    }

    /// CRC-32 (the polynomial gzip uses) of `count` zero bytes.
    static func crc32(ofZeros count: Int) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for _ in 0..<count {
            for _ in 0..<8 { crc = crc & 1 == 1 ? crc >> 1 ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    /// Deflate's bit order: values from the least significant bit, Huffman codes from the most.
    struct BitWriter {
        private var whole: [UInt8] = []
        private var pending: UInt64 = 0
        private var pendingCount = 0

        /// What was written, its last byte filled out with zeros.
        var bytes: [UInt8] { pendingCount == 0 ? whole : whole + [UInt8(pending)] }

        mutating func write(_ value: UInt32, count: Int) {
            pending |= (UInt64(value) & (1 << count - 1)) << pendingCount
            pendingCount += count
            while pendingCount >= 8 {
                whole.append(UInt8(truncatingIfNeeded: pending))
                pending >>= 8
                pendingCount -= 8
            }
        }

        mutating func writeCode(_ code: UInt32, length: Int) {
            var reversed: UInt32 = 0
            for index in 0..<length { reversed |= (code >> index & 1) << (length - 1 - index) }
            write(reversed, count: length)
        }

        /// Writes `codes` in turn, `times` over. Eight turns are whole bytes, so past the first
        /// eight, every eight add the same bytes: those are copied, not written bit by bit (a
        /// bomb of 256 MiB is a million turns).
        mutating func writeCodes(_ codes: [(code: UInt32, length: Int)], times: Int) {
            func turn() { for (code, length) in codes { writeCode(code, length: length) } }
            let eights = times / 8
            for _ in 0..<min(eights, 1) * 8 { turn() }
            if eights > 1 {
                let start = whole.count
                for _ in 0..<8 { turn() }
                let same = whole[start...]
                for _ in 2..<eights { whole.append(contentsOf: same) }
            }
            for _ in 0..<times % 8 { turn() }
        }
    }
}
