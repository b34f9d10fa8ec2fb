import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A recording in `.missing` mode in front of a cache: a recording made while the cache held
/// the answer holds only the server's `304` to the cache's conditional request. Replayed with a
/// cache that holds nothing, the request goes without conditions; the recorded exchange has its
/// method and URL, but a `304` is no answer to a request that asked for none.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingCacheBreakTests {
    /// The request without conditions gets the server's whole answer (sent, as `.missing` sends
    /// what the file does not answer), never a `304` it did not ask for. Tern replayed the
    /// recorded `304`, and the request failed with `unacceptableStatus` (304, empty body).
    @Test func aRecorded304IsNotTheAnswerToARequestWithoutConditions() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tern-recorded-304-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("session.har")
        let origin = try HTTPCacheTests.Origin { request, number in
            request.contains("If-None-Match: \"e\"") ? "HTTP/1.1 304 Not Modified\r\nCache-Control: max-age=0\r\nETag: \"e\"\r\n\r\n"
                : HTTPCacheTests.answer("whole answer \(number)", "Cache-Control: max-age=0\r\nETag: \"e\"\r\n")
        }
        let url = origin.url + "/doc"
        let warm = HTTPCache()
        func api(_ cache: HTTPCache, _ transport: (any Transport)?) -> AbstractAPI {
            AbstractAPI(configuration: APIConfiguration(timeout: 30, retryPolicy: .never, cache: cache), transport: transport, responseQueue: .global())
        }
        // Warmed through a recorder too: a cache serves an answer only to the transport of the
        // trust it was fetched under, and a recorder's is its own.
        let warming = try RecordingTransport(file: folder.appendingPathComponent("warming.har"), mode: .record, upstream: TestTransport.make())
        let direct: Response = try await api(warm, warming).request(route: .get(url)).value
        #expect(String(decoding: direct.body, as: UTF8.self) == "whole answer 0")
        let recording = try RecordingTransport(file: file, mode: .record, upstream: TestTransport.make())
        let revalidated: Response = try await api(warm, recording).request(route: .get(url)).value
        #expect(revalidated.cacheOutcome == .revalidated && String(decoding: revalidated.body, as: UTF8.self) == "whole answer 0")

        let missing = try RecordingTransport(file: file, mode: .missing, upstream: TestTransport.make())
        let result = await (api(HTTPCache(), missing).request(route: .get(url)) as Promise<Response>).result
        let answer = try? result.get()
        #expect(answer?.statusCode == 200 && answer.map { String(decoding: $0.body, as: UTF8.self) } == "whole answer 2", "\(result)")
    }
}
