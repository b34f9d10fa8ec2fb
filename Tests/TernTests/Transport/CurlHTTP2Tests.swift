#if os(Linux)
import Foundation
import Testing
import Tern
import TernTesting

/// HTTP/2 over libcurl, negotiated with ALPN against a server that offers it, as the system's
/// libcurl does when it was built with nghttp2 (Debian's is).
@Suite(.timeLimit(.minutes(1))) struct CurlHTTP2Tests {
    struct Item: Codable, Equatable {
        let name: String
    }

    static let items = [Item(name: "tern"), Item(name: "gull")]

    /// An API over libcurl that trusts the server's test CA.
    func api(for server: HTTP2Server) throws -> AbstractAPI {
        AbstractAPI(configuration: APIConfiguration(retryPolicy: .never),
                    transport: try CurlTransport(trusting: server.certificates.authority), responseQueue: .global())
    }

    @Test func requestsSentTogetherShareOneConnection() async throws {
        let server = try HTTP2Server(answering: try JSONEncoder().encode(Self.items))
        try await server.waitUntilListening()
        let api = try api(for: server)
        // Eight at once on a transport with no connection yet: they wait for the first one to
        // say it speaks HTTP/2, then share it. (s_server takes one connection at a time: a
        // request on a second one would never be answered.)
        let answers = try await withThrowingTaskGroup(of: [Item].self) { group in
            for _ in 0..<8 { group.addTask { try await (api.request(route: .get(server.url + "/items")) as Promise<[Item]>).value } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers == Array(repeating: Self.items, count: 8))
        #expect(server.connections == 1)
        #expect(Set(server.requests.map(\.stream)).count == 8, "each request a stream of its own")
    }

    @Test func aBodyGoesOutInDataFrames() async throws {
        let server = try HTTP2Server(answering: try JSONEncoder().encode(Self.items))
        try await server.waitUntilListening()
        let sent: [Item] = try await api(for: server).request(route: .post(server.url + "/items"), parameters: JSONParameters(Self.items)).value
        #expect(sent == Self.items)
        #expect(try server.requests.last.map { try JSONDecoder().decode([Item].self, from: $0.body) } == Self.items)
    }
}
#endif
