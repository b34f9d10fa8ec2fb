import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import TernCore
@testable import TernTransport

/// A receiver that pauses holds the server back (over libcurl on Linux, over URLSession on Apple
/// platforms): while paused, no more than the sockets' buffers leave the server; resumed, every
/// byte arrives once, in order.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct PausedTransferTests {
    static let size = 24 << 20

    /// The transport that can pause here: FoundationNetworking's tasks read on when suspended.
    static func pausingTransport() throws -> any Transport {
        #if os(Linux)
        try CurlTransport()
        #else
        URLSessionTransport()
        #endif
    }

    /// The body: each byte varies with its offset over long ranges, so that a chunk delivered
    /// twice or skipped shows.
    static let body: Data = {
        var body = Data(count: size)
        body.withUnsafeMutableBytes { (bytes: UnsafeMutableRawBufferPointer) in
            for offset in 0..<size { bytes[offset] = UInt8(truncatingIfNeeded: offset &+ offset >> 8 &+ offset >> 16) }
        }
        return body
    }()

    /// Counts and checks what arrives; pauses once, after `pauseAfter` bytes.
    final class Reader: TransportReceiver {
        struct State {
            var received = 0
            var mismatches = 0
            var paused = false
            var error: (any Error)?
            var completed = false
        }
        let state = Locked(State())
        let pauseAfter: Int

        init(pauseAfter: Int) { self.pauseAfter = pauseAfter }

        func didSendBodyData(_ totalSent: Int64, of totalExpected: Int64?) {}
        func didReceive(_ head: ResponseHead) -> TransferDecision { .proceed }

        func didReceive(_ chunk: Data) -> TransferDecision {
            state.withLock { state in
                let expected = PausedTransferTests.body[state.received..<min(state.received + chunk.count, PausedTransferTests.size)]
                if chunk != expected { state.mismatches += 1 }
                state.received += chunk.count
                guard !state.paused, state.received >= pauseAfter else { return .proceed }
                state.paused = true
                return .pause
            }
        }

        func didComplete(with error: (any Error)?) {
            state.withLock { state in
                state.error = error
                state.completed = true
            }
        }
    }

    /// Whether the body also goes gzipped, which Tern undoes itself over libcurl (on Linux).
    static let gzipped: [Bool] = {
        #if os(Linux)
        [false, true]
        #else
        [false]
        #endif
    }()

    @Test(arguments: gzipped)
    func aPausedTransferHoldsTheServerBackAndResumesWhereItStopped(gzipped: Bool) async throws {
        let sent = Locked(0)
        #if os(Linux)
        let wire = gzipped ? GzipStream.stored(Self.body) : Self.body
        #else
        let wire = Self.body
        #endif
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            let encoding = gzipped ? "Content-Encoding: gzip\r\n" : ""
            guard connection.send("HTTP/1.1 200 OK\r\n\(encoding)Content-Length: \(wire.count)\r\n\r\n") else { return }
            var offset = 0
            while offset < wire.count {
                let piece = [UInt8](wire[offset..<min(offset + 65_536, wire.count)])
                guard connection.send(piece) else { return }
                offset += piece.count
                sent.withLock { $0 = offset }
            }
        }
        defer { server.stop() }
        _ = Self.body
        let transport = try Self.pausingTransport()
        let reader = Reader(pauseAfter: 1 << 20)
        let task = transport.send(TransportRequest(urlRequest: URLRequest(url: URL(string: server.baseURL + "/large")!)), to: reader)
        #expect(await eventually { reader.state.withLock(\.paused) })
        // Paused: the server gets no further than what the sockets between can hold.
        try await Task.sleep(for: .milliseconds(300))
        let whilePaused = sent.withLock { $0 }
        #expect(whilePaused < Self.size / 2, "\(whilePaused) bytes left the server while the reader was paused")
        #expect(reader.state.withLock(\.received) < (1 << 20) + (1 << 20))
        task.resumeReceiving()
        #expect(await eventually { reader.state.withLock(\.completed) })
        let state = reader.state.withLock { $0 }
        #expect(state.error == nil)
        #expect(state.received == Self.size)
        #expect(state.mismatches == 0)
    }

    @Test func aPausedTransferCanBeCancelled() async throws {
        let server = try RawServer { connection in
            guard connection.readRequest() != nil else { return }
            _ = connection.send("HTTP/1.1 200 OK\r\nContent-Length: \(Self.size)\r\n\r\n")
            let piece = [UInt8](repeating: 0, count: 65_536)
            while connection.send(piece) {}
        }
        defer { server.stop() }
        let reader = Reader(pauseAfter: 1)
        let task = try Self.pausingTransport().send(TransportRequest(urlRequest: URLRequest(url: URL(string: server.baseURL + "/large")!)), to: reader)
        #expect(await eventually { reader.state.withLock(\.paused) })
        task.cancel()
        #expect(await eventually { reader.state.withLock(\.completed) })
        #expect((reader.state.withLock(\.error) as? URLError)?.code == .cancelled)
    }
}
