import Foundation
import Testing
import Tern
import TernTesting

/// A slash encoded in a path (`%2F`) is part of a name, not between names: `/files/a%2Fb` is the
/// file `a/b`, one segment, as a server routes it.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct StubEncodedPathAttackTests {
    /// `*` is one segment: the file `a/b` matches `/files/*`, not `/files/*/*` nor the literal
    /// `/files/a/b`. Before, the path was decoded before it was split, and `a%2Fb` was taken for
    /// two segments: the request was answered by the stub of the folder `a`'s file `b`.
    @Test func anEncodedSlashIsPartOfOneSegment() async throws {
        let stubs = StubTransport()
        // Those added later are tried first.
        stubs.add(Stub(.get, "/files/*", answers: .text("a file")))
        stubs.add(Stub(.get, "/files/*/*", answers: .text("a file in a folder")))
        stubs.add(Stub(.get, "/files/a/b", answers: .text("the file b in the folder a")))
        let api = AbstractAPI(configuration: APIConfiguration(retryPolicy: .never), transport: stubs, responseQueue: .global())
        let named: Response = try await api.request(route: .get("https://shop.example/files/a%2Fb")).value
        #expect(String(decoding: named.body, as: UTF8.self) == "a file")
        let nested: Response = try await api.request(route: .get("https://shop.example/files/a/b")).value
        #expect(String(decoding: nested.body, as: UTF8.self) == "the file b in the folder a")
        let encoded: Response = try await api.request(route: .get("https://shop.example/files/caf%C3%A9")).value
        #expect(String(decoding: encoded.body, as: UTF8.self) == "a file")
    }
}
