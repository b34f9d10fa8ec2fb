import Foundation
import Testing
@testable import Tern
@testable import TernTransport
import TernTesting

/// A body in a coding Tern cannot undo, which the request asked for by name, kept by the cache.
///
/// Promised (Security.md): "a request that names its own `Accept-Encoding` gets a coding it named
/// and Tern cannot undo as it came" (ResponsesAndErrors.md: "comes as it is"); and
/// CachingResponses.md: "Keep responses and answer from them as RFC 9111 allows, the same over
/// every transport". `Content-Encoding` describes the representation, not the message's framing
/// (RFC 9110 §8.4), and a cache keeps it with the body (RFC 9111 §3.1 lets a cache leave out
/// only hop-by-hop fields).
///
/// What goes wrong: the cache keeps the body as it came, still in the coding, but drops its
/// `Content-Encoding` (`CachedResponse.framing` names it, and `CachingReceiver.fields` leaves
/// it out). The same request, answered from the cache, gets the coded bytes as if they were the
/// document: nothing in the answer says they must be undone, and the caller that undid them the
/// first time (as the header told it) takes them as they are the second.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct KeptContentEncodingAttackTests {
    /// Stands for a body in a coding Tern has no decoder for (`compress`, LZW).
    static let coded = "\u{1F}\u{9D}\u{90}LZW-CODED-BYTES"

    @Test(.enabled(if: TestTransport.isCurl, "FoundationNetworking refuses a coding it cannot undo (\"Unrecognized content encoding\")"), arguments: [false, true])
    func aKeptBodyInACodingTheCallerUndoesKeepsItsContentEncoding(onDisk: Bool) async throws {
        let requests = Recorder<String>()
        let server = try RawServer { connection in
            while let request = connection.readRequest() {
                requests.append(request)
                let answer = RawServer.Connection.response(Self.coded, headers: "Content-Type: text/plain\r\nContent-Encoding: compress\r\n"
                                                               + "Vary: Accept-Encoding\r\nCache-Control: max-age=600\r\nETag: \"v1\"\r\n")
                guard connection.send(answer) else { return }
            }
        }
        defer { server.stop() }
        let directory = URL(fileURLWithPath: "/tmp/attack87-encoding-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = onDisk ? try HTTPCache(directory: directory) : HTTPCache()
        let api = AbstractAPI(configuration: APIConfiguration(timeout: 20, retryPolicy: .never, cache: cache),
                              transport: TestTransport.make(), responseQueue: .global())
        let options = RequestOptions(headers: ["Accept-Encoding": "compress"])
        let first: Response = try await api.request(route: .get(server.baseURL + "/doc"), options: options).value
        // As it came: the coded bytes, and the header that says so.
        #expect(first.headers["Content-Encoding"] == "compress")
        #expect(first.body == Data(Self.coded.utf8))
        let second: Response = try await api.request(route: .get(server.baseURL + "/doc"), options: options).value
        #expect(second.cacheOutcome == .hit)
        #expect(second.body == first.body)
        #expect(second.headers["Content-Encoding"] == "compress",
                "the kept answer's body is still in the coding, but nothing says so: headers \(second.headers)")
        #expect(requests.items.count == 1)
    }
}
