import Foundation
import Testing
import Tern
import TernTesting

/// A cookie's value is hidden in its field, and searched for everywhere else in the file, as a
/// token is. A cookie the server deletes carries no credential: its value (PHP's `deleted`) must
/// not be searched for, or every answer that says `deleted` replays another word, silently.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct RecordingCookieScrubAttackTests {
    /// An item deleted, then a sign-out that deletes the session cookie as PHP does
    /// (`PHPSESSID=deleted; Max-Age=0`, or an `Expires` in 1970): the item's answer replays as
    /// the server gave it.
    @Test(arguments: ["PHPSESSID=deleted; expires=Thu, 01-Jan-1970 00:00:01 GMT; Max-Age=0; path=/",
                      "PHPSESSID=deleted; Expires=Thu, 01 Jan 1970 00:00:01 GMT; Path=/"])
    func aCookieTheServerDeletesHidesNoWordElsewhere(setCookie: String) async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let stubs = StubTransport()
        stubs.add(Stub(.delete, "/items/3", answers: .json(#"{"id": 3, "state": "deleted"}"#)))
        stubs.add(Stub(.post, "/logout", answers: .status(204, headers: ["Set-Cookie": setCookie])))
        let recording = try TestAPI(baseURL: "https://shop.example", transport: RecordingTransport(file: file, mode: .record, upstream: stubs))
        let recorded: Data = try await recording.request(route: recording.delete(endpoint: "/items/3")).value
        let _: Data = try await recording.request(route: recording.post(endpoint: "/logout")).value

        let replaying = try TestAPI(baseURL: "https://shop.example", transport: RecordingTransport(file: file, mode: .replay))
        let replayed: Data = try await replaying.request(route: replaying.delete(endpoint: "/items/3")).value
        #expect(String(decoding: replayed, as: UTF8.self) == String(decoding: recorded, as: UTF8.self))
    }

    /// A nameless cookie (`Set-Cookie: t0k3n`, which RFC 6265bis and browsers keep, sent back as
    /// `Cookie: t0k3n`) is all value: it was kept in the clear, as if it were a name.
    @Test func aNamelessCookieIsHiddenWhole() async throws {
        let file = scratchRecording()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let stubs = StubTransport()
        stubs.add(Stub(.post, "/login", answers: .status(204, headers: ["Set-Cookie": "n4meless5ession; Path=/; HttpOnly, id=k33p5ecret; Path=/"])))
        stubs.add(Stub(.get, "/me", answers: .json(#"{"echo": "n4meless5ession"}"#)))
        let recording = try TestAPI(baseURL: "https://shop.example", transport: RecordingTransport(file: file, mode: .record, upstream: stubs))
        let _: Data = try await recording.request(route: recording.post(endpoint: "/login")).value
        let _: Data = try await recording.request(route: recording.get(endpoint: "/me"),
                                                  options: RequestOptions(headers: ["Cookie": "s3ntn4meless; id=k33p5ecret"])).value
        let written = try String(contentsOf: file, encoding: .utf8)
        for secret in ["n4meless5ession", "s3ntn4meless", "k33p5ecret"] {
            #expect(!written.contains(secret), "\(secret) in \(written)")
        }
        // The attributes, and the other cookie's name, are kept.
        #expect(written.contains("[redacted]; Path=/; HttpOnly, id=[redacted]; Path=/"), "\(written)")
    }
}
