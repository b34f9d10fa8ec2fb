import Foundation
import Testing
@testable import Tern

/// Two jars on one file, each within its limits: each writes its own cookies over what the
/// file holds (`CookieFileMerge.merged`), and the file then holds both sets, past the limits
/// either jar keeps. A jar made from that file (`CookieJar.init(file:)`) took all of it, with no
/// limit applied, and sent every cookie: twice `maximumPerDomain` for one site here; with
/// more runs sharing the file, more again (a request head a server refuses with 431, and a
/// jar's memory past `maximumCount`).
///
/// Promised (`CookieJar`): "It keeps at most `maximumPerDomain` cookies per domain and
/// `maximumCount` in all, dropping the least recently set first."
/// The jar does not depend on the transport: it fails the same on both.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CookieJarMergeLimitsAttackTests {
    /// The test's own folder, removed when it ends.
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-jar-limits-\(UUID().uuidString)")
    var file: URL { directory.appendingPathComponent("cookies.json") }
    let url = URL(string: "https://shop.example.com/")!

    @Test func aJarReadFromASharedFileKeepsItsLimits() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = CookieJar(file: file, maximumPerDomain: 10, maximumCount: 15)
        let second = CookieJar(file: file, maximumPerDomain: 10, maximumCount: 15)
        for index in 0..<10 {
            first.setCookies(from: ["first\(index)=v; Max-Age=3600"], for: url)
            second.setCookies(from: ["second\(index)=v; Max-Age=3600"], for: url)
        }
        first.waitForWrites()
        second.waitForWrites()
        #expect(first.cookies(for: url).count == 10 && second.cookies(for: url).count == 10)

        let nextLaunch = CookieJar(file: file, maximumPerDomain: 10, maximumCount: 15)
        #expect(nextLaunch.cookies(for: url).count <= 10, "cookies the jar sends to one site")
        #expect(nextLaunch.all.count <= 15, "cookies the jar holds")
    }
}
