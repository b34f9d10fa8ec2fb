import Foundation
import Testing
@testable import Tern

/// The jar held to its limits, as its documentation says it is: "dropping the least recently
/// set first". A cookie the server set again (a session refreshed, say) is the most recently
/// set; when the whole jar is over `maximumCount`, one set long ago and never again goes first.
@Suite(.onTestThreads) struct CookieEvictionAttackTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// `a` is set, then `b`, then `a` again (its value refreshed), then `c` with the jar full
    /// at two: `b` is the least recently set and goes; `a`, refreshed after it, stays. The jar
    /// ranked cookies across domains by when each was *first* set (`created`, kept across a
    /// replacement so that the sending order stays RFC 6265bis's), so it dropped the refreshed
    /// `a=2` and kept `b`.
    @Test func aCookieSetAgainIsNotTheFirstToGoWhenTheJarIsFull() {
        let jar = CookieJar(maximumPerDomain: 50, maximumCount: 2)
        jar.setCookies(from: ["a=1; Path=/"], for: URL(string: "https://a.example.com/")!, at: now)
        jar.setCookies(from: ["b=1; Path=/"], for: URL(string: "https://b.example.com/")!, at: now.addingTimeInterval(1))
        jar.setCookies(from: ["a=2; Path=/"], for: URL(string: "https://a.example.com/")!, at: now.addingTimeInterval(2))
        jar.setCookies(from: ["c=1; Path=/"], for: URL(string: "https://c.example.com/")!, at: now.addingTimeInterval(3))
        let kept = Set(jar.all.map { "\($0.name)=\($0.value)" })
        #expect(kept == ["a=2", "c=1"], "\(kept)")
    }

    /// The same, across a launch: the jar's file keeps when each cookie was last set, and a jar
    /// that reads it drops `b` first, not the refreshed `a`.
    @Test func aCookieSetAgainIsNotTheFirstToGoAfterTheJarIsReadFromItsFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-jar-eviction-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("cookies.json")
        let first = CookieJar(file: file, maximumPerDomain: 50, maximumCount: 2)
        first.setCookies(from: ["a=1; Max-Age=3600"], for: URL(string: "https://a.example.com/")!, at: now)
        first.setCookies(from: ["b=1; Max-Age=3600"], for: URL(string: "https://b.example.com/")!, at: now.addingTimeInterval(1))
        first.setCookies(from: ["a=2; Max-Age=3600"], for: URL(string: "https://a.example.com/")!, at: now.addingTimeInterval(2))
        first.waitForWrites()
        let second = CookieJar(file: file, maximumPerDomain: 50, maximumCount: 2)
        try #require(second.all.count == 2, "\(second.all)")
        second.setCookies(from: ["c=1; Max-Age=3600"], for: URL(string: "https://c.example.com/")!, at: now.addingTimeInterval(3))
        let kept = Set(second.all.map { "\($0.name)=\($0.value)" })
        #expect(kept == ["a=2", "c=1"], "\(kept)")
    }

    /// A jar's file written before the jar kept when a cookie was set again still reads.
    @Test func aFileWithoutTheTimeACookieWasSetAgainStillReads() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-jar-eviction-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("cookies.json")
        let expires = Date().addingTimeInterval(3600).timeIntervalSinceReferenceDate
        let old = #"[{"name":"a","value":"1","domain":"a.example.com","isHostOnly":true,"path":"/","expires":\#(expires),"isSecure":false,"isHTTPOnly":false,"created":0}]"#
        try Data(old.utf8).write(to: file)
        let jar = CookieJar(file: file)
        #expect(jar.all.map { "\($0.name)=\($0.value)" } == ["a=1"])
    }
}
