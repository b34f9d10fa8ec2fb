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

    /// A pattern may be written as `stubs.requests` shows the path, encoded, or as it reads,
    /// decoded: both name the same segments. Before, only the request's segments were decoded,
    /// so `/notes/a%20b` never matched its own request, and a name with a `/` in it could not be
    /// stubbed at all; the mismatch then read "path /notes/a%20b does not match /notes/a%20b".
    @Test func aPatternMatchesWrittenAsSentOrAsItReads() async throws {
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/notes/a%20b", answers: .text("encoded")))
        stubs.add(Stub(.get, "/files/a%2Fb", answers: .text("a slash in a name")))
        stubs.add(Stub(.get, "/spaced/a b", answers: .text("decoded")))
        stubs.add(Stub(.get, "/stars/%2A", answers: .text("a star, not any segment")))
        let api = AbstractAPI(configuration: APIConfiguration(baseURL: "https://shop.example", retryPolicy: .never),
                              transport: stubs, responseQueue: .global())
        for (path, expected) in [("/notes/a%20b", "encoded"), ("/files/a%2Fb", "a slash in a name"),
                                 ("/spaced/a%20b", "decoded"), ("/stars/%2A", "a star, not any segment")] {
            let response: Response = try await api.request(route: .get(path)).value
            #expect(String(decoding: response.body, as: UTF8.self) == expected, "\(path)")
        }
        let unmatched = await #expect(throws: APIError.self) { _ = try await (api.request(route: .get("/stars/x")) as Promise<Data>).value }
        #expect(unmatched.map { "\($0)" }?.contains("/stars/x") == true)
    }

    /// Where the request's path and a pattern differ only once decoded, the mismatch says how
    /// each segment reads, so that the two spellings are not printed as if equal.
    @Test func aMismatchShowsTheSegmentsAsTheyRead() async throws {
        let stubs = StubTransport()
        stubs.add(Stub(.get, "/files/a/b", answers: .text("nested")))
        let api = AbstractAPI(configuration: APIConfiguration(baseURL: "https://shop.example", retryPolicy: .never),
                              transport: stubs, responseQueue: .global())
        let error = await #expect(throws: APIError.self) { _ = try await (api.request(route: .get("/files/a%2Fb")) as Promise<Data>).value }
        let text = error.map { "\($0)" } ?? ""
        #expect(text.contains(#"["files", "a/b"]"#), "\(text)")
    }
}
