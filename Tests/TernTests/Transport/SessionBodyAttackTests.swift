#if canImport(FoundationNetworking)
import Dispatch
import Foundation
import FoundationNetworking
import Testing
import Tern
@testable import TernTransport

/// What FoundationNetworking's transport does with bodies it reads before a task starts (those
/// of 16 MiB or less, read into the request): a file held to its length that grew past it since
/// it was sized, and a line of requests waiting for a plain-HTTP origin whose bodies all fail.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct SessionBodyAttackTests {
    /// A file that holds more than it held when sized (appended to, or another renamed over it
    /// in between): its first bytes were sent as the whole body and the upload succeeded, bytes
    /// that were never a version of the file. It fails as a body that ran long, as over libcurl.
    @Test func aFileLongerThanItWasSizedFailsAsRunningLong() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tern-session-body-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(repeating: 7, count: 2000).write(to: file)
        var urlRequest = URLRequest(url: URL(string: "http://127.0.0.1:1/upload")!)
        urlRequest.httpMethod = "PUT"
        let body = BodyStream(length: 1000) { SegmentStream([.file(file, length: 1000)]) }
        #expect(throws: BodyLengthMismatch(statedLength: 1000, actualLength: 1001)) {
            _ = try URLSessionTransport.prepare(TransportRequest(urlRequest: urlRequest, body: .stream(body)))
        }
    }

    /// A stream held to its length whose source fails at its end fails the body, with the
    /// source's error.
    @Test func aSourceThatFailsAtItsEndFailsTheBody() throws {
        struct Broken: Error {}
        final class FailingAtEnd: InputStream {
            private var given = false
            private var failed = false
            override var streamStatus: Stream.Status { failed ? .error : .open }
            override var streamError: (any Error)? { failed ? Broken() : nil }
            override var hasBytesAvailable: Bool { !failed }
            override func open() {}
            override func close() {}
            override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
                guard !given else { failed = true; return -1 }
                given = true
                for index in 0..<min(len, 20) { buffer[index] = 1 }
                return min(len, 20)
            }
        }
        let body = SegmentStream([.stream(BodyStream(length: 20) { FailingAtEnd(data: Data()) }, length: 20), .data(Data("tail".utf8))])
        body.open()
        defer { body.close() }
        var buffer = [UInt8](repeating: 0, count: 64)
        var results: [Int] = []
        while results.last.map({ $0 > 0 }) ?? true, results.count < 10 { results.append(body.read(&buffer, maxLength: buffer.count)) }
        #expect(results.last == -1, "\(results)")
        #expect(body.streamError is Broken, "\(String(describing: body.streamError))")
    }

    /// Hundreds of uploads wait for a plain-HTTP origin's one connection, and every body fails
    /// as it is read (a folder of files deleted, no descriptor left): once the connection is
    /// free they fail one after another, each with its error, and the stack does not grow with
    /// the line (each started the next from inside itself, and thousands ran a thread out).
    @Test func aLineOfFailingBodiesEndsWithoutGrowingTheStack() async throws {
        struct Gone: Error {}
        let release = DispatchSemaphore(value: 0)
        let server = try RawServer { connection in
            while connection.readRequest() != nil {
                _ = release.wait(timeout: .now() + 30)
                connection.send(RawServer.Connection.response("ok"))
            }
        }
        defer { server.stop() }
        let configuration = URLSessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = 1
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: URLSessionTransport(configuration: configuration),
                              responseQueue: .global())
        let held: Promise<String> = api.request(route: .get(server.baseURL + "/held"))
        let depths = Recorder<Int>()
        let count = 300
        let failing: [Promise<Response>] = (0..<count).map { _ in
            api.request(route: .put(server.baseURL + "/upload"), parameters: BodyParameters(length: 4) {
                depths.append(Thread.callStackSymbols.count)
                throw Gone()
            })
        }
        // Let the line form behind the held request before it ends.
        try await Task.sleep(for: .milliseconds(200))
        release.signal()
        _ = try await held.value
        for promise in failing {
            let result = await promise.result
            guard case .failure = result else { Issue.record("expected a failure, got \(result)"); continue }
        }
        let seen = depths.items
        #expect(seen.count == count)
        #expect((seen.max() ?? 0) - (seen.min() ?? 0) < 50, "stack depths from \(seen.min() ?? 0) to \(seen.max() ?? 0)")
    }
}
#endif
