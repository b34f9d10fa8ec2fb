import Foundation
import Testing
@testable import Tern

/// Two jars on one file (two runs of a tool, an app and its widget), and a session the server
/// keeps alive with a short `Max-Age`, renewed at each request (a sliding session). The jar that
/// renewed it last wrote the renewed cookie to the file; the other still holds the copy it read
/// or set earlier, which has since expired. At that other jar's next write (any cookie of any
/// site), `CookieFileMerge.merged` counted the expired copy as one the jar "removed" (it was in
/// what the jar last wrote, and is no longer among the lasting cookies it holds, `all` leaving
/// expired ones out), and dropped every cookie of that name, domain and path from the file: the
/// renewed session the other jar wrote. The next launch was signed out.
///
/// Promised (`CookieJar.init(file:)`): "Jars in several launches (or processes) may share the
/// file: each writes what it changed over what the file holds then [...] and keeps what the
/// others set or deleted." A cookie expiring in one jar's memory is no change the jar made.
/// The jar does not depend on the transport: it fails the same on both.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CookieJarExpiredCopyAttackTests {
    /// The test's own folder, removed when it ends.
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-jar-expired-\(UUID().uuidString)")
    var file: URL { directory.appendingPathComponent("cookies.json") }
    let url = URL(string: "https://shop.example.com/")!

    /// Sets `field` in `jar` for `url` and waits for the file.
    func set(_ field: String, in jar: CookieJar, for url: URL? = nil) {
        jar.setCookies(from: [field], for: url ?? self.url)
        jar.waitForWrites()
    }

    @Test func aSessionAnotherJarRenewedIsKeptWhenThisJarsCopyHasExpired() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let app = CookieJar(file: file)
        set("session=s1; Max-Age=2", in: app)              // the app signs in: a two-second session
        let widget = CookieJar(file: file)                   // the widget reads it
        set("session=s2; Max-Age=3600", in: widget)          // and the server renews it there
        #expect(CookieJar(file: file).cookies(for: url).map(\.value) == ["s2"])

        try await Task.sleep(for: .seconds(3))               // the app's own copy expires
        // The app keeps a cookie of another site.
        set("lang=en; Max-Age=3600", in: app, for: URL(string: "https://news.example.org/")!)

        let nextLaunch = CookieJar(file: file).cookies(for: url).map { "\($0.name)=\($0.value)" }
        #expect(nextLaunch == ["session=s2"], "the renewed session another jar wrote was dropped from the file")
    }
}
