import Foundation
import Testing
import Tern
import TernTesting
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `HEAD` answered with a body, through a redirect and an HTTP cache: every hop of the chain,
/// the redirect and its target, writes bytes after its head that no `HEAD` has. No request
/// after them takes those bytes for its answer, no `GET` is answered with the `HEAD`'s empty
/// body from the cache, and what the cache keeps of the chain answers the same again.
@Suite(.onTestThreads, .timeLimit(.minutes(1)),
       .enabled(if: TestTransport.refusesStrayBytes, "FoundationNetworking reuses a connection with unread input"))
struct HeadWithBodyChainTests {
    /// `/a` redirects to `/b`, kept for ten minutes both; a `HEAD` of either gets its head and
    /// then a body all the same, which looks like the start of another answer.
    static func server() throws -> RawServer {
        try RawServer { connection in
            while let request = connection.readRequest() {
                let isHead = request.hasPrefix("HEAD ")
                let target = request.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
                let stray = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"
                let body = target == "/a" ? "moved" : "GET \(target)"
                var head = "HTTP/1.1 \(target == "/a" ? "302 Found\r\nLocation: /b" : "200 OK")\r\n"
                head += "Cache-Control: max-age=600\r\nContent-Length: \(isHead ? stray.utf8.count : body.utf8.count)\r\n\r\n"
                _ = connection.send(head + (isHead ? stray : body))
            }
        }
    }

    static func text(_ response: Response) -> String { String(decoding: response.body, as: UTF8.self) }

    @Test(arguments: [false, true]) func aHeadAnsweredWithABodyThroughARedirectAndTheCacheAnswersNoOtherRequest(onDisk: Bool) async throws {
        let server = try Self.server()
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-head-chain-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = onDisk ? try HTTPCache(directory: directory) : HTTPCache()
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never, cache: cache), transport: TestTransport.make(),
                              responseQueue: .global())
        for round in 0..<2 {
            let head: Response = try await api.request(route: .head(server.baseURL + "/a")).value
            #expect(head.statusCode == 200 && head.body.isEmpty, "round \(round): \(head.statusCode) \(Self.text(head))")
            let get: Response = try await api.request(route: .get(server.baseURL + "/a")).value
            #expect(Self.text(get) == "GET /b", "round \(round)")
            let other: Response = try await api.request(route: .get(server.baseURL + "/c\(round)")).value
            #expect(Self.text(other) == "GET /c\(round)", "round \(round)")
        }
    }
}
