#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting
@testable import TernTransport

/// A compressed body on the paths other than a promise's bytes: the cache keeps what was
/// undone, a stream hands its lines over undone, a download writes them to its file; and a
/// stream cut short is an error on each, never a cached answer, a last line or a file.
@Suite(.onTestThreads, .timeLimit(.minutes(2)), .enabled(if: TestTransport.isCurl, "URLSession on Linux takes a cut-short gzip stream for a whole one (Linux.md)"))
struct EncodedBodyPathsTests {
    static let text = ContentEncodingTests.text
    static let whole = GzipStream.stored(text)
    static let cutShort = whole.prefix(whole.count / 2)

    /// A server answering every request with `gzip` and `headers`, and counting them.
    static func server(_ gzip: Data, headers: String = "", requests: Recorder<String>) throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                requests.append(request)
                let head = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\(headers)Content-Length: \(gzip.count)\r\n\r\n"
                guard connection.send(Array(head.utf8) + [UInt8](gzip)) else { return }
            }
        }
    }

    func api(cache: HTTPCache? = nil) -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, cache: cache), transport: TestTransport.make(),
                    responseQueue: .global())
    }

    @Test func theCacheKeepsTheBodyUndoneAndNeverOneCutShort() async throws {
        let requests = Recorder<String>()
        let server = try Self.server(Self.whole, headers: "Cache-Control: max-age=60\r\n", requests: requests)
        defer { server.stop() }
        let api = api(cache: HTTPCache())
        for _ in 0..<2 {
            let body: Data = try await api.request(route: .get(server.baseURL + "/kept")).value
            #expect(body == Self.text)
        }
        #expect(requests.items.count == 1)

        let cutRequests = Recorder<String>()
        let cut = try Self.server(Self.cutShort, headers: "Cache-Control: max-age=60\r\n", requests: cutRequests)
        defer { cut.stop() }
        for _ in 0..<2 {
            let error = await apiError(of: api.request(route: .get(cut.baseURL + "/cut")) as Promise<Data>)
            guard case .transportFailed(let failure)? = error else { Issue.record("expected transportFailed, got \(String(describing: error))"); return }
            #expect(failure.urlError?.code == .cannotDecodeContentData, "\(failure)")
        }
        #expect(cutRequests.items.count == 2)
    }

    @Test func aStreamHandsOverItsLinesUndoneAndFailsWhenCutShort() async throws {
        let requests = Recorder<String>()
        let server = try Self.server(Self.whole, requests: requests)
        defer { server.stop() }
        var lines: [String] = []
        for try await line in api().stream(route: .get(server.baseURL + "/lines")).lines { lines.append(line) }
        #expect(lines.count == 3_000 && lines.first == "line 0 of the body" && lines.last == "line 2999 of the body")

        let cut = try Self.server(Self.cutShort, requests: requests)
        defer { cut.stop() }
        var seen = 0
        do {
            for try await _ in api().stream(route: .get(cut.baseURL + "/lines")).lines { seen += 1 }
            Issue.record("a stream cut short ended without an error after \(seen) lines")
        } catch let error as APIError {
            guard case .transportFailed(let failure) = error else { Issue.record("expected transportFailed, got \(error)"); return }
            #expect(failure.urlError?.code == .cannotDecodeContentData, "\(failure)")
        }
        #expect(seen < 3_000)
    }

    @Test func aDownloadWritesTheBodyUndoneAndNoFileWhenCutShort() async throws {
        let requests = Recorder<String>()
        let server = try Self.server(Self.whole, requests: requests)
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-encoded-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let destination = directory.appendingPathComponent("body.txt")
        let file = try await api().download(route: .get(server.baseURL + "/file"), to: destination).value
        #expect(try Data(contentsOf: file.fileURL) == Self.text)

        let cut = try Self.server(Self.cutShort, requests: requests)
        defer { cut.stop() }
        let failed = directory.appendingPathComponent("cut.txt")
        let error = await apiError(of: api().download(route: .get(cut.baseURL + "/file"), to: failed))
        guard case .transportFailed(let failure)? = error else { Issue.record("expected transportFailed, got \(String(describing: error))"); return }
        #expect(failure.urlError?.code == .cannotDecodeContentData, "\(failure)")
        #expect(!FileManager.default.fileExists(atPath: failed.path))
    }
}
#endif
