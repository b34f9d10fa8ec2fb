import Foundation
import Testing
import Tern
import TernTesting

/// A `HEAD` asks how large a resource is without its body: the answer's `Content-Length` is the
/// size of the body a `GET` would get, and no body follows (RFC 9110, §9.3.2). A `304` may state
/// the length of the representation it confirms (§8.6). Neither length is a body coming, so
/// neither is measured against the body limit.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct HeadLengthAttackTests {
    /// The length stated: a video of 5 GB, far over the 64 MiB body limit.
    static let size = "5000000000"

    /// A server answering every request with a head alone, stating `size`: a `HEAD`'s answer,
    /// or, with `status`, another that has no body.
    static func server(status: String = "200 OK") throws -> RawServer {
        try RawServer { connection in
            while connection.readRequest() != nil {
                _ = connection.send("HTTP/1.1 \(status)\r\nContent-Type: video/mp4\r\nETag: \"v1\"\r\nContent-Length: \(size)\r\n\r\n")
            }
        }
    }

    /// A `HEAD` of a resource larger than the body limit is answered with its length. Before,
    /// the stated length was taken for a body coming, and the request failed with
    /// `BodyLimitExceeded` although no body was to come.
    @Test func aHeadOfAResourceLargerThanTheBodyLimitIsAnswered() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        let head: Response = try await api.request(route: .head(server.baseURL + "/film.mp4")).value
        #expect(head.statusCode == 200 && head.body.isEmpty)
        #expect(head.headers["Content-Length"] == Self.size)
    }

    /// A `304` to the app's own conditional request, stating the length of what it confirms,
    /// is answered too (without a cache, the app asked for it and handles it).
    @Test func aNotModifiedStatingALengthOverTheBodyLimitIsAnswered() async throws {
        let server = try Self.server(status: "304 Not Modified")
        defer { server.stop() }
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: TestTransport.make(), responseQueue: .global())
        let own = RequestOptions(headers: ["If-None-Match": "\"v1\""], validation: .acceptAll)
        let answer: Response = try await api.request(route: .get(server.baseURL + "/film.mp4"), options: own).value
        #expect(answer.statusCode == 304 && answer.body.isEmpty)
    }
}
