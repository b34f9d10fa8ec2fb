#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import Tern
import TernTesting

/// A stream body that yields more than its stated length (here, without end: a stream of
/// random bytes, `InputStream(fileAtPath: "/dev/urandom")`, given the length to send), sent
/// through the test transports. The real transports stop it one byte past its length: "A stream
/// that yields more bytes than its stated length ... The transfer is stopped and its connection
/// closed, and the request fails with this error" (`BodyLengthMismatch`). A
/// ``RecordingTransport`` (recording through the transport under test, or replaying) and a
/// ``StubTransport`` read the body themselves first (`StubTransport.eachPiece`), to digest it or
/// match stubs against it, to its end whatever its stated length; the stub transport holds every
/// byte read meanwhile. The request settles only by its timeout (10 s here, 60 by default, never
/// with `.infinity`), and its body is read on after that, without end. The transport alone (the
/// first case) stops the stream as promised. RecordingAndReplaying.md: "everything above the
/// transport is the real pipeline"; a test recorded through it must fail as the app would.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordedStreamLengthAttackTests {
    enum Through: String, CaseIterable, Sendable { case transport, recording, replaying, stubs }

    /// A stream of bytes without end, 4 KiB a read and a millisecond apart (a bounded stand-in
    /// for `/dev/urandom`), until `stop` ends it.
    final class EndlessStream: InputStream {
        let stop: ResumeLie.Shared<Bool>
        let read: ResumeLie.Shared<Int>

        init(stop: ResumeLie.Shared<Bool>, counting read: ResumeLie.Shared<Int>) {
            self.stop = stop
            self.read = read
            super.init(data: Data())
        }

        override func open() {}
        override func close() {}
        override var hasBytesAvailable: Bool { !stop.value }
        override var streamStatus: Stream.Status { .open }
        override var streamError: (any Error)? { nil }

        override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int {
            if stop.value { return 0 }
            usleep(1000)
            let count = min(length, 4096)
            for index in 0..<count { buffer[index] = UInt8(truncatingIfNeeded: index &* 31) }
            read.update { $0 += count }
            return count
        }

        override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>) -> Bool { false }
    }

    @Test(arguments: Through.allCases) func aStreamLongerThanItsLengthSettlesTyped(through: Through) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tern-attack89a-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try LoopbackServer { _ in .json("{}") }
        defer { server.stop() }
        let transport: any Transport
        let baseURL: String
        switch through {
        case .transport:
            // The transport alone: stopped one byte past the length.
            baseURL = server.baseURL
            transport = try #require(TestTransport.make())
        case .recording:
            baseURL = server.baseURL
            transport = try RecordingTransport(file: folder.appendingPathComponent("session.har"), mode: .record, upstream: TestTransport.make())
        case .replaying:
            baseURL = "https://shop.example"
            transport = try RecordingTransport(file: folder.appendingPathComponent("session.har"), mode: .replay)
        case .stubs:
            let stubs = StubTransport()
            stubs.add(Stub(.post, "/**", answers: .json("{}")))
            baseURL = "https://shop.example"
            transport = stubs
        }
        let stop = ResumeLie.Shared(false)
        let made = ResumeLie.Shared(0), read = ResumeLie.Shared(0)
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: .never), transport: transport, responseQueue: .global())
        let promise: Promise<Data> = api.request(route: .post(baseURL + "/measurements"),
                                                 parameters: BodyParameters(length: 1000, contentType: "application/octet-stream") {
                                                     made.update { $0 += 1 }
                                                     return EndlessStream(stop: stop, counting: read)
                                                 })
        let settled = Recorder<(timedOut: Bool, text: String)>()
        promise.onResult(in: .global()) { result in
            if case .failure(APIError.timeout) = result { settled.append((true, "\(result)")) } else { settled.append((false, "\(result)")) }
        }
        let came = await eventually(timeout: 20) { !settled.items.isEmpty }
        // What its streams yielded as it settled, and two seconds after.
        let atTheEnd = (made: made.value, bytes: read.value)
        try await Task.sleep(for: .seconds(2))
        let later = read.value
        // Whatever happened, end the streams, and the request.
        stop.value = true
        promise.cancel()
        _ = await eventually(timeout: 5) { !settled.items.isEmpty }
        #expect(came, "the request had not settled 20 s (its timeout 10 s) after it was made; its streams (made, bytes they yielded): \(atTheEnd)")
        if came, let outcome = settled.items.first {
            #expect(!outcome.timedOut, "settled only by the request's timeout: \(outcome.text)")
        }
        #expect(later - atTheEnd.bytes < 1 << 20, "still read after the request settled: \(atTheEnd.bytes) bytes then, \(later) two seconds later")
    }
}
