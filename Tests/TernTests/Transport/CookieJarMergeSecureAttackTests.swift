import Foundation
import Testing
@testable import Tern

/// Two jars on one file (two runs of a tool, an app and its widget). One signs in over `https`:
/// the server sets `session` with `Secure`, and the jar writes it to the file. The other, which
/// read the file before, then gets an answer over plain `http` (a redirect's first hop, a
/// network that injects answers into plain `http`) that sets `session` without `Secure`. In its
/// own memory there is no Secure `session` to protect, so it keeps it; its write then merged
/// it over the file as "a cookie this jar set" (`CookieFileMerge.merged`), replacing the Secure
/// cookie the other jar wrote. The next launch sent the attacker's session (a login-CSRF:
/// the user's actions go to the attacker's account), and sent it over plain `http` too.
///
/// Promised (`CookieJar`): "What a browser refuses, the jar refuses: [...] a `Secure` cookie, or
/// one that would shadow a `Secure` one, from plain `http`" (RFC 6265bis, section 5.7, step 16);
/// and (`init(file:)`) each jar on a shared file "keeps what the others set". A single jar that
/// held both in this order refuses the second (`CookieTests.aSecureCookieCannotBeShadowedFromPlainHTTP`).
/// The jar does not depend on the transport: it fails the same on both.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CookieJarMergeSecureAttackTests {
    /// The test's own folder, removed when it ends.
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-jar-secure-\(UUID().uuidString)")
    var file: URL { directory.appendingPathComponent("cookies.json") }

    @Test func aSecureCookieAnotherJarWroteIsNotReplacedFromPlainHTTP() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let app = CookieJar(file: file), widget = CookieJar(file: file)   // both read the file, empty
        app.setCookies(from: ["session=alice; Secure; Path=/; Max-Age=3600"], for: URL(string: "https://shop.example.com/login")!)
        app.waitForWrites()
        widget.setCookies(from: ["session=attacker; Path=/; Max-Age=3600"], for: URL(string: "http://shop.example.com/")!)
        widget.waitForWrites()

        let nextLaunch = CookieJar(file: file)
        let overHTTPS = nextLaunch.cookies(for: URL(string: "https://shop.example.com/account")!).map { "\($0.name)=\($0.value)" }
        let overHTTP = nextLaunch.cookies(for: URL(string: "http://shop.example.com/account")!).map { "\($0.name)=\($0.value)" }
        #expect(overHTTPS == ["session=alice"], "a cookie set from plain http took the Secure cookie's place in the file")
        #expect(overHTTP == [], "sent over plain http")
    }
}
