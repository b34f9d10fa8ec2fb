#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import Tern
import TernTesting

/// A file body swapped for a pipe between two attempts of its request (a retry after a 503),
/// sent through the test transports: a ``RecordingTransport`` recording through the transport
/// under test, and a ``StubTransport``. Both read a file body themselves, to digest and record
/// it or to match it against their stubs, and opened it as a plain `FileHandle`: a pipe's
/// `open` waits for a writer that never comes: the request settles only by its timeout (10 s
/// here, 60 by default, never with `.infinity`), and the thread stays blocked after it. The
/// transport alone (the first case) refuses the pipe as it opens it.
///
/// The transports hold a file body to "a regular file opened for reading in a way that never
/// waits: a file swapped for a pipe after it was checked ... is refused as it is opened"
/// (TernTransport's `RegularFile`), and UploadFileChangeAttackTests to "each upload settles
/// once, whole from one version of the file or with a typed error (never the request's
/// timeout)". RecordingAndReplaying.md promises that everything above the transport is the
/// real pipeline: a test recorded through it must see what the app would, not a hang.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordedUploadSwapAttackTests {
    enum Through: String, CaseIterable, Sendable { case transport, recording, stubs }

    /// Replaces `file` by a named pipe, as a rename does: in one step.
    static func swapForAPipe(_ file: URL) {
        let pipe = file.appendingPathExtension("fifo")
        guard mkfifo(pipe.path, 0o600) == 0 else { return }
        _ = rename(pipe.path, file.path)
    }

    /// Lets a reader blocked opening the pipe at `file` go: a writer opens and closes it.
    static func release(_ file: URL) {
        let writer = open(file.path, O_WRONLY | O_NONBLOCK)
        if writer >= 0 { close(writer) }
    }

    @Test(arguments: Through.allCases) func aFileSwappedForAPipeBeforeItsRetrySettlesTyped(through: Through) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tern-attack89a-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let upload = folder.appendingPathComponent("photo.jpg")
        try Data(repeating: 7, count: 1000).write(to: upload)
        let asked = Recorder<Int>()

        var server: RawServer?
        let transport: any Transport
        let baseURL: String
        switch through {
        case .transport, .recording:
            // The first request is answered 503 once its body is read, the file swapped first.
            let raw = try RawServer { connection in
                while let head = connection.readHead() {
                    let length = head.split(separator: "\r\n").compactMap { line -> Int? in
                        let parts = line.split(separator: ":", maxSplits: 1)
                        guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                        return Int(parts[1].trimmingCharacters(in: .whitespaces))
                    }.first ?? 0
                    _ = connection.discard(length, within: 5)
                    asked.append(length)
                    if asked.items.count == 1 {
                        Self.swapForAPipe(upload)
                        guard connection.send(RawServer.Connection.response("busy", status: "503 Service Unavailable")) else { return }
                    } else {
                        guard connection.send(RawServer.Connection.response("{}")) else { return }
                    }
                }
            }
            server = raw
            baseURL = raw.baseURL
            // The transport alone refuses the pipe as it opens it.
            let real = try #require(TestTransport.make())
            transport = through == .transport ? real
                : try RecordingTransport(file: folder.appendingPathComponent("session.har"), mode: .record, upstream: real)
        case .stubs:
            let stubs = StubTransport()
            stubs.add(Stub(.put, "/**", respond: { request in
                asked.append(request.bodyLength)
                if asked.items.count == 1 {
                    Self.swapForAPipe(upload)
                    return .text("busy", status: 503)
                }
                return .json("{}")
            }))
            baseURL = "https://shop.example"
            transport = stubs
        }
        defer { server?.stop() }

        let api = AbstractAPI(configuration: APIConfiguration(timeout: 10, retryPolicy: RetryPolicy(maxRetries: 1, baseDelay: 0.2, jitter: false)),
                              transport: transport, responseQueue: .global())
        let promise: Promise<Data> = api.request(route: .put(baseURL + "/photos/1"),
                                                 parameters: BodyParameters(upload, contentType: "image/jpeg"))
        let settled = Recorder<(timedOut: Bool, text: String)>()
        promise.onResult(in: .global()) { result in
            if case .failure(APIError.timeout) = result { settled.append((true, "\(result)")) } else { settled.append((false, "\(result)")) }
        }
        let came = await eventually(timeout: 20) { !settled.items.isEmpty }
        // Whatever happened, let a reader blocked on the pipe go, and the request end.
        Self.release(upload)
        promise.cancel()
        _ = await eventually(timeout: 5) { !settled.items.isEmpty }
        #expect(came, "the upload had not settled 20 s (its timeout 10 s) after its file became a pipe (asked \(asked.items.count) times)")
        if came, let outcome = settled.items.first {
            #expect(!outcome.timedOut, "settled only by the request's timeout: \(outcome.text)")
        }
    }
}
