import Foundation
import Testing
@testable import Tern

/// Two jars on one file (`CookieJar(file:)`): two launches of an app, two runs of a tool. Each
/// wrote the whole file from its own memory, so the last to write dropped what the other had
/// set (a session cookie the server had just rotated) and brought back what it had deleted.
/// Each now writes its own changes over the file as it finds it, under a lock on the folder.
@Suite(.onTestThreads, .timeLimit(.minutes(1))) struct CookieJarSharedFileAttackTests {
    /// The test's own folder, removed when it ends.
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tern-jar-shared-\(UUID().uuidString)")
    var file: URL { directory.appendingPathComponent("cookies.json") }
    let url = URL(string: "https://shop.example.com/")!

    /// `name=value` for each cookie a new jar reads from the file for `url`, sorted.
    func onDisk() -> [String] {
        CookieJar(file: file).cookies(for: url).map { "\($0.name)=\($0.value)" }.sorted()
    }

    /// Sets `field` in `jar` and waits for the file.
    func set(_ field: String, in jar: CookieJar) {
        jar.setCookies(from: [field], for: url)
        jar.waitForWrites()
    }

    @Test func aCookieAnotherJarSetIsKeptWhenThisOneWrites() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = CookieJar(file: file), second = CookieJar(file: file)
        set("session=rotated; Max-Age=3600", in: first)
        set("theme=dark; Max-Age=3600", in: second)
        #expect(onDisk() == ["session=rotated", "theme=dark"])
    }

    @Test func aCookieAnotherJarDeletedIsNotBroughtBack() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        set("session=s1; Max-Age=3600", in: CookieJar(file: file))
        let first = CookieJar(file: file), second = CookieJar(file: file)   // both read the session
        set("session=gone; Max-Age=0", in: first)                           // signed out
        set("theme=dark; Max-Age=3600", in: second)
        #expect(onDisk() == ["theme=dark"])
    }

    @Test func aValueAnotherJarReplacedIsNotPutBack() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        set("session=s1; Max-Age=3600", in: CookieJar(file: file))
        let first = CookieJar(file: file), second = CookieJar(file: file)
        set("session=s2; Max-Age=3600", in: first)
        set("theme=dark; Max-Age=3600", in: second)   // second still holds s1, unchanged by it
        #expect(onDisk() == ["session=s2", "theme=dark"])
        // What a jar changes itself wins over what it read.
        set("session=s3; Max-Age=3600", in: second)
        #expect(onDisk() == ["session=s3", "theme=dark"])
    }

    /// Two jars setting cookies at once from two threads, each write reading and writing the
    /// file: with no lock between them, one read the file before the other's write and wrote
    /// over it.
    @Test func twoJarsWritingAtOnceLoseNothing() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let jars = [CookieJar(file: file, maximumPerDomain: 500), CookieJar(file: file, maximumPerDomain: 500)]
        await withTaskGroup(of: Void.self) { group in
            for (index, jar) in jars.enumerated() {
                group.addTask {
                    for cookie in 0..<100 { jar.setCookies(from: ["c\(index)-\(cookie)=v; Max-Age=3600"], for: url) }
                    jar.waitForWrites()
                }
            }
        }
        let read = CookieJar(file: file, maximumPerDomain: 500).cookies(for: url)
        #expect(read.count == 200)
    }

    /// A jar that removes every cookie leaves the file without its own, and with what another
    /// jar set meanwhile.
    @Test func removingAllRemovesThisJarsCookiesFromTheFile() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        set("session=s1; Max-Age=3600", in: CookieJar(file: file))
        let first = CookieJar(file: file), second = CookieJar(file: file)
        set("theme=dark; Max-Age=3600", in: second)
        first.removeAll()
        first.waitForWrites()
        #expect(onDisk() == ["theme=dark"])
    }
}
